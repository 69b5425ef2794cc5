"""Every rule's metadata, without importing the rule modules.

Importing a rule module imports libcst and the facts layer, most of a one-file run's start-up,
yet a run whose files all fail the prefilter needs only each rule's code, default and triggers.
``source_metadata`` reads them from the modules' source; what it read is kept in a table beside
amplint's bytecode (``bytecode_tables``), keyed by the checksums of the sources it read, so that
the next run reads the table instead of parsing (figures in docs/performance.md).

A rule whose metadata cannot be read that way is imported instead: slower, never wrong.
``tests/test_rule_catalog.py`` checks that every shipped rule is read, and read exactly as its
class declares, from the sources and from the table.
"""

from __future__ import annotations

import importlib
import os
from functools import lru_cache

import amplint.bytecode_tables as bytecode_tables
from amplint.model import FixSafety, Severity
import amplint.rules.base as base
from amplint.rules.metadata import RuleInfo

TYPE_CHECKING = False  # typing itself is not imported: a clean run does not need it
if TYPE_CHECKING:
    from typing import Union

    from amplint.rules.base import Rule

    RuleEntry = Union[RuleInfo, type[Rule]]

PACKAGE = "amplint.rules"
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def rule_module_names() -> tuple[str, ...]:
    """The rule modules of this package (``amp*.py``), in name order."""
    return tuple(sorted(name[:-3] for name in os.listdir(PACKAGE_DIR) if name.startswith("amp") and name.endswith(".py")))


def import_rule_modules() -> None:
    """Import every rule module, which registers its rules in ``base.RULES``."""
    for name in rule_module_names():
        importlib.import_module(f"{PACKAGE}.{name}")


def all_rules() -> dict[str, type[Rule]]:
    """Every rule class, by code, in code order (imports every rule module, and with them libcst).

    Code that needs only metadata uses :func:`rule_catalog` instead.
    """
    import_rule_modules()
    return dict(sorted(base.RULES.items()))


def rule_catalog() -> dict[str, RuleEntry]:
    """Every rule by code, in code order: a :class:`RuleInfo`, or the class once it is imported.

    Registered classes win: they are what actually runs, and they include rules defined outside
    this package's files (tests, plugins).
    """
    return dict(sorted({**_read_package(), **base.RULES}.items()))


@lru_cache(maxsize=1)
def _read_package() -> dict[str, RuleInfo]:
    """The package's rules read from source, or from the table of a run that read these sources."""
    names = rule_module_names()
    sources = {name: _source_bytes(os.path.join(PACKAGE_DIR, f"{name}.py")) for name in names}
    key = _sources_key(sources)
    path = bytecode_tables.table_path("rule-catalog")
    if path is not None:
        table = bytecode_tables.read_table(path)
        if table.get("key") == key:
            return {row[0]: _info_from_row(row) for row in table["rules"]}
    from amplint.rules.source_metadata import Unreadable, read_rules

    infos: dict[str, RuleInfo] = {}
    complete = True
    for name in names:
        module = f"{PACKAGE}.{name}"
        try:
            found = read_rules(sources[name].decode("utf-8"), module)
        except (UnicodeDecodeError, Unreadable):
            importlib.import_module(module)  # registers its classes in base.RULES
            complete = False
            continue
        infos.update((info.code, info) for info in found)
    if complete and path is not None and bytecode_tables.may_write():
        bytecode_tables.write_table(path, {"key": key, "rules": [_row_of(info) for info in infos.values()]})
    return infos


# What the metadata read depends on besides the rule modules: the reader, the constants and
# enums a rule may name, and the table's rows.
_READER_SOURCES = tuple(os.path.join(PACKAGE_DIR, *parts) for parts in (
    ("source_metadata.py",), ("base.py",), ("catalog.py",), (os.pardir, "model.py"),
))


def _source_bytes(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _sources_key(sources: dict[str, bytes]) -> tuple:
    """Names, sizes and checksums of the rule modules and the reader: the table's key."""
    import zlib

    def digest(data: bytes) -> tuple[int, int]:
        return len(data), zlib.crc32(data)

    rules = tuple((name, *digest(data)) for name, data in sources.items())
    return rules, tuple(digest(_source_bytes(path)) for path in _READER_SOURCES)


def _row_of(info: RuleInfo) -> tuple:
    return (info.code, info.name, info.summary, info.module, info.docstring, info.severity.name,
            info.fix_safety.name, info.fix_withheld, info.default_enabled, info.triggers, info.requires, info.requires_match, info.focus_tokens)


def _info_from_row(row: tuple) -> RuleInfo:
    code, name, summary, module, docstring, severity, fix_safety, fix_withheld, default_enabled, triggers, requires, requires_match, focus_tokens = row
    return RuleInfo(code=code, name=name, summary=summary, module=module, docstring=docstring,
                    severity=Severity[severity], fix_safety=FixSafety[fix_safety], fix_withheld=fix_withheld,
                    default_enabled=default_enabled, triggers=triggers, requires=requires, requires_match=requires_match,
                    focus_tokens=focus_tokens)


