"""``[tool.amplint]`` in ``pyproject.toml`` and top-level keys in ``.amplint.toml`` / ``amplint.toml``.

The nearest configuration file is searched upward from the first path given (or the
current directory). In one directory ``.amplint.toml`` wins over ``amplint.toml``, which wins
over ``pyproject.toml`` (ruff's order for its own three files); a ``pyproject.toml`` without a
``[tool.amplint]`` table is not a configuration file and the search goes on upward. As in
ruff, the rule settings may also sit in a ``lint`` sub-table (``[tool.amplint.lint]``,
``[lint]``); a key set in both places takes the ``lint`` table's value. Every problem is a :class:`ConfigError` whose message is one line
naming the file (and the key): the CLI prints it as ``amplint: error: <message>``.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

TYPE_CHECKING = False  # typing itself is not imported: a clean run does not need it
if TYPE_CHECKING:
    from typing import Any

CONFIG_FILES = (".amplint.toml", "amplint.toml", "pyproject.toml")

# Real configuration files are a few KiB; anything this large is not one.
MAX_CONFIG_BYTES = 1024 * 1024

KEYS = (
    "select",
    "ignore",
    "extend-ignore",
    "extend-select",
    "unfixable",
    "per-file-ignores",
    "exclude",
    "extend-exclude",
    "extend-include",
    "extension",
    "target-torch",
    "target-transformers",
    "output-format",
    "project-analysis",
)
# The keys ruff keeps under [tool.ruff.lint]; the rest stay in the top-level table.
LINT_KEYS = ("select", "ignore", "extend-ignore", "extend-select", "unfixable", "per-file-ignores")


class ConfigError(Exception):
    """A one-line, user-facing problem with a configuration file."""


@dataclass(frozen=True)
class Config:
    """The ``[tool.amplint]`` values of one configuration file (``None``: not set there)."""

    path: Path | None = None  # the file the values came from (None: defaults)
    select: tuple[str, ...] | None = None  # None: not set
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] | None = None  # None: the default excludes
    extend_exclude: tuple[str, ...] = ()
    target_torch: tuple[int, int] | None = None
    target_torch_text: str | None = field(default=None, compare=False)
    target_transformers: tuple[int, int] | None = None
    output_format: str | None = None  # None: not set (the CLI's default)
    unfixable: tuple[str, ...] = ()
    extend_include: tuple[str, ...] = ()  # globs of more files to find besides *.py, *.pyi, *.ipynb
    extension: tuple[tuple[str, str], ...] = ()  # (extension without dot, language)
    project_analysis: bool = True  # False: each file is linted on its own (``project-analysis = false``)

    @property
    def root(self) -> Path:
        """Directory that per-file-ignores and exclude patterns are relative to."""
        return self.path.parent if self.path is not None else Path.cwd()


def _load_toml(path: Path, label: str) -> dict[str, Any]:
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        if not stat.S_ISREG(os.stat(path).st_mode) and not path.is_dir():
            raise ConfigError(f"{label}: not a regular file")
        with open(path, "rb") as handle:
            # Checked on the open file: a FIFO would block a read, /dev/zero never end it.
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise ConfigError(f"{label}: not a regular file")
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except IsADirectoryError:
        raise ConfigError(f"{label}: is a directory, not a configuration file") from None
    except OSError as exc:
        raise ConfigError(f"{label}: cannot read ({exc.strerror or exc})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{label}: too large for a configuration file (over {MAX_CONFIG_BYTES // 1024} KiB)")
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{label}: not valid UTF-8 at byte {exc.start}") from None
    except tomllib.TOMLDecodeError as exc:
        message = " ".join(str(exc).split())
        raise ConfigError(f"{label}: invalid TOML: {message}") from None


def display_path(path: Path) -> str:
    """``path`` relative to the current directory when it lies below it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # pragma: no cover - other drive on Windows
        return str(path)
    return str(path) if rel.startswith("..") else rel


def _table(path: Path) -> tuple[dict[str, Any] | None, str]:
    """The amplint settings table in ``path`` (None if a pyproject.toml has none) and its label."""
    label = display_path(path)
    data = _load_toml(path, label)
    if path.name == "pyproject.toml":
        tool = data.get("tool")
        if not isinstance(tool, dict) or "amplint" not in tool:
            return None, label
        table = tool["amplint"]
        if not isinstance(table, dict):
            raise ConfigError(f"{label}: [tool.amplint] must be a table")
        return table, f"{label}: [tool.amplint]"
    return data, label


def find_config(start: Path | None = None) -> Path | None:
    """The nearest configuration file at or above ``start`` (a file or directory)."""
    here = Path(start) if start is not None else Path.cwd()
    try:
        here = here.resolve()
    except OSError:  # pragma: no cover - broken path
        here = Path.cwd().resolve()
    if not here.is_dir():
        here = here.parent
    for directory in (here, *here.parents):
        for name in CONFIG_FILES:
            candidate = directory / name
            if candidate.is_file() or _exists_but_is_not_a_file(candidate):
                if name == "pyproject.toml":
                    table, _ = _table(candidate)
                    if table is None:
                        continue
                return candidate
    return None


def _exists_but_is_not_a_file(path: Path) -> bool:
    # Reading it reports what it is (a directory, a FIFO): a silent skip would hide it.
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        raise ConfigError(f"{where} must be a list of strings, e.g. [\"{value}\"]")
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where} must be a list of strings")
    return tuple(value)


def _selectors(value: Any, where: str) -> tuple[str, ...]:
    from amplint.settings import SelectionError, expand_selectors, known_codes

    items = tuple(item.strip().upper() for item in _strings(value, where))
    if any(not item for item in items):
        raise ConfigError(f"{where}: empty rule selector \"\" (it would select nothing)")
    try:
        expand_selectors(items, known_codes())
    except SelectionError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return items


def _output_format(value: Any, where: str) -> str:
    from amplint.report import ALIASES, FORMATS

    if not isinstance(value, str) or (value not in FORMATS and value not in ALIASES):
        raise ConfigError(f"{where} must be one of: {', '.join(FORMATS)}")
    return value


def parse_table(table: dict[str, Any], label: str, path: Path | None) -> Config:
    """Validate a settings table (already read from ``label``) into a :class:`Config`."""
    from amplint.settings import SelectionError, parse_torch_version

    values: dict[str, Any] = {}
    for key, value in _with_lint_table(table, label).items():
        if key not in KEYS:
            import difflib  # only a misspelt key needs it

            close = difflib.get_close_matches(key, KEYS, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ConfigError(f"{label} unknown key '{key}'{hint}")
        where = f"{label} '{key}'"
        if key in ("ignore", "extend-ignore"):  # extend-ignore: ruff's older spelling; both add up
            values["ignore"] = (*values.get("ignore", ()), *_selectors(value, where))
        elif key in ("select", "extend-select", "unfixable"):
            values[key.replace("-", "_")] = _selectors(value, where)
        elif key == "extend-include":
            values["extend_include"] = _include_globs(value, where)
        elif key == "extension":
            values["extension"] = _extensions(value, where)
        elif key in ("exclude", "extend-exclude"):
            values[key.replace("-", "_")] = _patterns(value, where)
        elif key == "per-file-ignores":
            if not isinstance(value, dict):
                raise ConfigError(f"{where} must be a table of glob = [codes]")
            entries = []
            for pattern, codes in value.items():
                entries.append((pattern, _selectors(codes, f"{label} 'per-file-ignores' \"{pattern}\"")))
            values["per_file_ignores"] = tuple(entries)
        elif key == "target-torch":
            if not isinstance(value, str):
                raise ConfigError(f"{where} must be a string such as \"2.4\" (a float would read 2.10 as 2.1)")
            try:
                values["target_torch"] = parse_torch_version(value)
            except SelectionError as exc:
                raise ConfigError(f"{where}: {exc}") from None
            values["target_torch_text"] = value
        elif key == "target-transformers":
            if not isinstance(value, str):
                raise ConfigError(f"{where} must be a string such as \"5.0\" (a float would read 4.10 as 4.1)")
            try:
                values["target_transformers"] = parse_torch_version(value)
            except SelectionError as exc:
                raise ConfigError(f"{where}: {exc}") from None
        elif key == "output-format":
            values["output_format"] = _output_format(value, where)
        elif key == "project-analysis":
            if not isinstance(value, bool):
                raise ConfigError(f"{where} must be true or false")
            values["project_analysis"] = value
    _check_conflicts(values, label)
    return Config(path=path, **values)


def _with_lint_table(table: dict[str, Any], label: str) -> dict[str, Any]:
    """``table`` with its ``lint`` sub-table's keys raised into it (they win over the same key above)."""
    if "lint" not in table:
        return table
    lint = table["lint"]
    lint_label = f"{label[:-1]}.lint]" if label.endswith("]") else f"{label} [lint]"
    if not isinstance(lint, dict):
        raise ConfigError(f"{lint_label} must be a table")
    for key in lint:
        if key in KEYS and key not in LINT_KEYS:
            raise ConfigError(f"{lint_label} '{key}' belongs in {label.rsplit(' ', 1)[-1] if label.endswith(']') else 'the top level'}, not in the lint table")
        if key not in KEYS:
            import difflib

            close = difflib.get_close_matches(key, LINT_KEYS, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ConfigError(f"{lint_label} unknown key '{key}'{hint}")
    merged = {key: value for key, value in table.items() if key != "lint"}
    merged.update(lint)
    return merged


def _include_globs(value: Any, where: str) -> tuple[str, ...]:
    globs = _strings(value, where)
    for glob in globs:
        if not glob.strip() or glob.startswith("!"):
            raise ConfigError(f"{where}: {glob!r} is not a file glob such as \"*.pyw\"")
    return globs


LANGUAGES = ("python", "pyi", "ipynb")


def _extensions(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in KEYS and not isinstance(item, str):
                # TOML puts every key after a [table] header into that table.
                file, _, parent = where.rpartition(" 'extension'")[0].partition(": ")
                header = f"[{parent.strip('[]:') + '.' if parent.strip('[]:') else ''}extension]"
                raise ConfigError(
                    f"{file.rstrip(':')}: {header} '{key}' is a setting, not an extension: move it above the {header} header"
                )
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(f"{where} must be a table of extension = \"python\" | \"pyi\" | \"ipynb\"")
    return parse_extensions([f"{extension}:{language}" for extension, language in value.items()], where)


def parse_extensions(values, where: str) -> tuple[tuple[str, str], ...]:
    """``EXT:LANG`` mappings (``pyw:python``; comma-separated too), the extension without its dot."""
    pairs: list[tuple[str, str]] = []
    for value in values:
        for item in (part.strip() for part in value.split(",")):
            extension, sep, language = item.partition(":")
            extension = extension.strip().lstrip(".")
            language = language.strip().lower()
            if not sep or not extension or any(c in extension for c in "/\\*?[ "):
                raise ConfigError(f"{where}: expected EXT:LANG such as pyw:python, got {item!r}")
            if language not in LANGUAGES:
                raise ConfigError(
                    f"{where}: unknown language {language!r} for .{extension} (expected one of: {', '.join(LANGUAGES)})"
                )
            pairs.append((extension, language))
    return tuple(pairs)


def _patterns(value: Any, where: str) -> tuple[str, ...]:
    from amplint.discovery import PatternError, check_pattern

    patterns = _strings(value, where)
    for pattern in patterns:
        try:
            check_pattern(pattern)
        except PatternError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return patterns


def _check_conflicts(values: dict[str, Any], label: str) -> None:
    """A selection that contradicts itself is a mistake, not a way to turn rules off."""
    from amplint.settings import expand_selectors, known_codes

    selected = (*values.get("select", ()), *values.get("extend_select", ()))
    ignored = values.get("ignore", ())
    for selector in selected:
        if selector in ignored:
            raise ConfigError(f"{label} '{selector}' is both selected and ignored")
    if values.get("select"):
        known = known_codes()
        if not expand_selectors(tuple(selected), known) - expand_selectors(tuple(ignored), known):
            raise ConfigError(f"{label} 'ignore' removes every rule that 'select' enables")


def load_config(path: Path) -> Config:
    """Read and validate one configuration file (given with ``--config`` or found)."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{display_path(path)}: configuration file not found")
    if path.is_dir():
        raise ConfigError(f"{display_path(path)}: is a directory, not a configuration file")
    table, label = _table(path)
    if table is None:
        # An explicitly named pyproject.toml without [tool.amplint]: defaults, rooted there.
        return Config(path=path.resolve())
    if path.name != "pyproject.toml":
        label = f"{label}:"
    return parse_table(table, label, path.resolve())


def resolve_config(explicit: str | os.PathLike | None, start: Path | None) -> Config:
    """The configuration for a run: ``--config`` if given, else the nearest file, else defaults."""
    if explicit is not None:
        return load_config(Path(explicit))
    found = find_config(start)
    if found is None:
        return Config()
    return load_config(found)
