"""The oldest torch a project says it supports, read from its packaging files.

When neither ``--target-torch`` nor ``target-torch`` is set, the default comes from the
project's own torch requirement, as ruff takes its target version from ``requires-python``:
the lowest release a ``torch>=X`` (``~=X``, ``==X.*``, ``>X``, Poetry's ``^X``) requirement
admits, in

- ``pyproject.toml``: ``[project] dependencies``, ``[project.optional-dependencies]``,
  ``[tool.poetry.dependencies]``;
- ``setup.cfg``: ``[options] install_requires`` and ``[options.extras_require]``;
- ``setup.py``: literal ``install_requires=[...]`` / ``extras_require={...}`` of ``setup(...)``
  (read with ``ast``, never run), also through a module-level name bound to such a literal;
- ``requirements*.txt``, following their ``-r`` includes.

All in one directory: the configuration file's, or without one the nearest directory at or
above the linted path that holds one of these files. When the files disagree the lowest bound
wins (the code must run on every torch any of them admits) and the others are named.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from amplint.version_specifiers import Release, lowest_release

PROJECT_FILES = ("pyproject.toml", "setup.cfg", "setup.py")
# Packaging files are small; a larger one is not read (nothing is inferred from it).
MAX_FILE_BYTES = 1024 * 1024
_MAX_INCLUDE_DEPTH = 5

# PEP 508: a name, extras, then a version specifier (maybe in parentheses), a URL or markers.
_REQUIREMENT = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(.*)")


@dataclass(frozen=True)
class TorchBound:
    """One torch requirement with a lower bound."""

    release: Release
    requirement: str  # as written: "torch>=2.1" (Poetry: "torch = ^2.1")
    source: str  # the file, relative to the project directory: "pyproject.toml"


@dataclass(frozen=True)
class InferredTarget:
    """The lowest bound found and the others that admit only newer releases."""

    lowest: TorchBound
    others: tuple[TorchBound, ...] = ()

    @property
    def release(self) -> Release:
        return self.lowest.release

    def describe(self) -> str:
        """``inferred from pyproject.toml: torch>=2.1`` (and the higher bounds it was preferred to)."""
        text = f"inferred from {self.lowest.source}: {self.lowest.requirement}"
        if self.others:
            higher = "; ".join(f"{bound.source}: {bound.requirement}" for bound in self.others)
            text += f" (the lowest bound; also {higher})"
        return text


def requirement_bound(requirement: str, package: str = "torch") -> Release | None:
    """The lowest release a PEP 508 requirement on ``package`` admits; ``None`` for another package,
    a requirement without a lower bound (``torch``, ``torch<3``) or a URL (``torch @ https://...``)."""
    match = _REQUIREMENT.fullmatch(requirement.strip())
    if match is None or re.sub(r"[-_.]+", "-", match.group(1)).lower() != package:
        return None
    rest = match.group(2).split(";", 1)[0].strip()  # markers do not change the bound
    if rest.startswith("@"):
        return None
    if rest.startswith("(") and rest.endswith(")"):
        rest = rest[1:-1]
    return lowest_release(rest) if rest else None


def infer_target_torch(directory: Path, package: str = "torch") -> InferredTarget | None:
    """The lowest torch (or other ``package``) release the project in ``directory`` requires;
    ``None`` when none of its files has such a requirement with a lower bound (or none can be read)."""
    bounds: list[TorchBound] = []
    for name, reader in (("pyproject.toml", _pyproject), ("setup.cfg", _setup_cfg), ("setup.py", _setup_py)):
        text = _read(directory / name)
        if text is not None:
            bounds.extend(TorchBound(release, requirement, name) for release, requirement in reader(text, package))
    for path in sorted(directory.glob("requirements*.txt")):
        bounds.extend(_requirements_file(path, directory, set(), 0, package))
    if not bounds:
        return None
    lowest = min(bounds, key=lambda bound: bound.release)
    others = tuple(
        bound for bound in dict.fromkeys(bounds) if bound.release != lowest.release and bound is not lowest
    )
    return InferredTarget(lowest, others)


def project_directory(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` with a packaging or requirements file."""
    try:
        here = start.resolve()
    except OSError:
        return None
    if not here.is_dir():
        here = here.parent
    for directory in (here, *here.parents):
        if any((directory / name).is_file() for name in PROJECT_FILES) or next(directory.glob("requirements*.txt"), None):
            return directory
    return None


def _read(path: Path) -> str | None:
    try:
        if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _bounds(requirements, package: str, label=lambda requirement: requirement):
    for requirement in requirements:
        if isinstance(requirement, str):
            release = requirement_bound(requirement, package)
            if release is not None:
                yield release, label(requirement).strip()


def _pyproject(text: str, package: str):
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return  # a broken pyproject.toml is the configuration reader's to report, not this one's
    project = data.get("project")
    if isinstance(project, dict):
        if isinstance(project.get("dependencies"), list):
            yield from _bounds(project["dependencies"], package)
        extras = project.get("optional-dependencies")
        if isinstance(extras, dict):
            for group in extras.values():
                if isinstance(group, list):
                    yield from _bounds(group, package)
    tool = data.get("tool")
    poetry = tool.get("poetry") if isinstance(tool, dict) else None
    dependencies = poetry.get("dependencies") if isinstance(poetry, dict) else None
    if isinstance(dependencies, dict):
        for name, value in dependencies.items():
            if re.sub(r"[-_.]+", "-", str(name)).lower() == package:
                yield from _poetry_bounds(name, value)


def _poetry_bounds(name: str, value):
    """``torch = "^2.1"``, ``torch = {version = ">=2.1"}``, or a list of such tables."""
    for item in value if isinstance(value, list) else [value]:
        constraint = item.get("version") if isinstance(item, dict) else item
        if isinstance(constraint, str):
            release = lowest_release(constraint, poetry=True)
            if release is not None:
                yield release, f'{name} = "{constraint}"'


def _setup_cfg(text: str, package: str):
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return
    lines: list[str] = []
    if parser.has_option("options", "install_requires"):
        lines.extend(parser.get("options", "install_requires").splitlines())
    if parser.has_section("options.extras_require"):
        for _, value in parser.items("options.extras_require"):
            lines.extend(value.splitlines())
    yield from _bounds((line.split(" #", 1)[0] for line in lines if line.strip()), package)


def _setup_py(text: str, package: str):
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    literals: dict[str, ast.expr] = {}
    for statement in tree.body:  # REQUIRED = [...] read before setup(install_requires=REQUIRED)
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
            literals[statement.targets[0].id] = statement.value
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or _called_name(node.func) != "setup":
            continue
        for keyword in node.keywords:
            if keyword.arg not in ("install_requires", "extras_require"):
                continue
            value = keyword.value
            if isinstance(value, ast.Name):
                value = literals.get(value.id, value)
            try:
                literal = ast.literal_eval(value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue  # built at run time (read from a file, computed): never executed here
            groups = literal.values() if isinstance(literal, dict) else [literal]
            for group in groups:
                if isinstance(group, (list, tuple)):
                    yield from _bounds(group, package)
                elif isinstance(group, str):
                    yield from _bounds([group], package)


def _called_name(func) -> str | None:
    import ast

    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _requirements_file(path: Path, directory: Path, seen: set[Path], depth: int, package: str) -> list[TorchBound]:
    try:
        resolved = path.resolve()
    except OSError:
        return []
    text = _read(path)
    if text is None or resolved in seen or depth > _MAX_INCLUDE_DEPTH:
        return []
    seen.add(resolved)
    try:
        label = path.relative_to(directory).as_posix()
    except ValueError:
        label = path.as_posix()
    bounds: list[TorchBound] = []
    for line in text.replace("\\\n", " ").splitlines():
        line = re.split(r"(?:^|\s)#", line, maxsplit=1)[0].strip()
        include = re.match(r"(?:-r|--requirement)(?:\s+|=)?(\S+)", line)
        if include:
            bounds.extend(_requirements_file(path.parent / include.group(1), directory, seen, depth + 1, package))
            continue
        if not line or line.startswith("-"):
            continue  # other pip options: -e, -c (constraints do not require), --index-url
        requirement = re.split(r"\s+--?[a-z]", line, maxsplit=1)[0]  # per-requirement options: --hash=...
        release = requirement_bound(requirement, package)
        if release is not None:
            bounds.append(TorchBound(release, requirement.strip(), label))
    return bounds


def infer_for_run(config_path: Path | None, start: Path, package: str = "torch") -> InferredTarget | None:
    """The inferred target of a run: from the configuration file's directory when there is one
    (ruff reads ``requires-python`` beside its configuration), else from the nearest project
    directory at or above ``start``."""
    directory = config_path.parent if config_path is not None else project_directory(start)
    return infer_target_torch(directory, package) if directory is not None else None
