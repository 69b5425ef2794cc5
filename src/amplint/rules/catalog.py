"""Every rule's metadata, read from the rule modules' source without importing them.

Importing a rule module imports libcst and the facts layer, most of a one-file run's start-up,
yet a run whose files all fail the prefilter needs only each rule's code, default and triggers.
Those are literal class attributes, so they are read from the source with ``ast``, parsing only
the rule class up to its last metadata line (the docstring and the metadata): the examples and
the check logic are most of the parsing cost (figures in docs/performance.md).

A rule whose metadata this cannot read (values that are not literals or constants of
``amplint.rules.base``, a base class other than ``Rule``) is imported instead: slower, never
wrong. ``tests/test_rule_catalog.py`` checks that every shipped rule is read, and read exactly
as its class declares.
"""

from __future__ import annotations

import ast
import importlib
import itertools
import os
import re
import warnings
from functools import lru_cache

from amplint.model import FixSafety, Severity
from amplint.rules import base
from amplint.rules.metadata import RuleInfo

TYPE_CHECKING = False  # typing itself is not imported: a clean run does not need it
if TYPE_CHECKING:
    from typing import Union

    from amplint.rules.base import Rule

    RuleEntry = Union[RuleInfo, type[Rule]]

PACKAGE = "amplint.rules"
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
FIELDS = ("code", "name", "summary", "severity", "fix_safety", "default_enabled", "triggers", "focus_tokens")
_ENUMS = {"FixSafety": FixSafety, "Severity": Severity}
_RULE_CLASS = re.compile(r"^class[ \t]+\w+[ \t]*\([ \t]*Rule[ \t]*\)[ \t]*:", re.MULTILINE)


class Unreadable(Exception):
    """The rule's metadata is not plain enough to read without running its module."""


def rule_module_names() -> tuple[str, ...]:
    """The rule modules of this package (``amp*.py``), in name order."""
    return tuple(sorted(name[:-3] for name in os.listdir(PACKAGE_DIR) if name.startswith("amp") and name.endswith(".py")))


def import_rule_modules() -> None:
    """Import every rule module, which registers its rules in ``base.RULES``."""
    for name in rule_module_names():
        importlib.import_module(f"{PACKAGE}.{name}")


def rule_catalog() -> dict[str, RuleEntry]:
    """Every rule by code, in code order: a :class:`RuleInfo`, or the class once it is imported.

    Registered classes win: they are what actually runs, and they include rules defined outside
    this package's files (tests, plugins).
    """
    return dict(sorted({**_read_package(), **base.RULES}.items()))


@lru_cache(maxsize=1)
def _read_package() -> dict[str, RuleInfo]:
    infos: dict[str, RuleInfo] = {}
    for name in rule_module_names():
        module = f"{PACKAGE}.{name}"
        try:
            with open(os.path.join(PACKAGE_DIR, f"{name}.py"), encoding="utf-8") as handle:
                found = read_rules(handle.read(), module)
        except (UnicodeDecodeError, Unreadable):
            importlib.import_module(module)  # registers its classes in base.RULES
            continue
        infos.update((info.code, info) for info in found)
    return infos


def read_rules(source: str, module: str) -> list[RuleInfo]:
    """The metadata of each ``class X(Rule)`` in a rule module's source; raises :class:`Unreadable`.

    Parses from the first rule class to just past the last line that could assign a metadata
    field at the class body's indentation. Every real class-level assignment matches that
    pattern, so none is left out; a match inside a string only makes the parsed part longer.
    """
    first = _RULE_CLASS.search(source)
    if first is None:
        raise Unreadable(f"{module}: no `class ...(Rule):` found")
    indent = _body_indent(source, first.end())
    fields = re.compile(rf"^{indent}(?:{'|'.join(FIELDS)})[ \t]*[:=]", re.MULTILINE)
    last = None
    for last in fields.finditer(source, first.end()):
        pass
    if last is None:
        raise Unreadable(f"{module}: no metadata assignment found")
    tree = _parse_prefix(source, first.start(), last.end(), indent, module)
    infos = [
        _info(node.body, module)
        for node in tree.body
        if isinstance(node, ast.ClassDef) and _is_rule_base(node.bases)
    ]
    if not infos:
        raise Unreadable(f"{module}: no rule class parsed")
    return infos


def _is_rule_base(bases: list[ast.expr]) -> bool:
    return len(bases) == 1 and isinstance(bases[0], ast.Name) and bases[0].id == "Rule"


def _body_indent(source: str, class_end: int) -> str:
    match = re.compile(r"^([ \t]+)\S", re.MULTILINE).search(source, class_end)
    if match is None:
        raise Unreadable("a rule class without a body")
    return match.group(1)


def _parse_prefix(source: str, start: int, after: int, indent: str, module: str) -> ast.Module:
    """``source[start:cut]`` parsed, for the first statement boundary ``cut`` past ``after``.

    A candidate boundary inside a string or brackets leaves the prefix unparsable, so the first
    one that parses is a real statement boundary.
    """
    boundaries = re.compile(rf"^(?:{indent}[^\s#)\]}}]|[^\s#])", re.MULTILINE)
    cuts = itertools.chain((match.start() for match in boundaries.finditer(source, after)), [len(source)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escapes in examples are not ours to report
        for cut in cuts:
            try:
                return ast.parse(source[start:cut])
            except SyntaxError:
                continue
    raise Unreadable(f"{module}: the rule class does not parse")


def _info(body: list[ast.stmt], module: str) -> RuleInfo:
    values: dict[str, object] = {}
    docstring = ""
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        docstring = body[0].value.value
    for statement in body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id in FIELDS:
            values[target.id] = _value(value, module)
    missing = [field for field in ("code", "name", "summary") if field not in values]
    if missing:
        raise Unreadable(f"{module}: no literal {', '.join(missing)}")
    return RuleInfo(module=module, docstring=docstring, **values)  # type: ignore[arg-type]


def _value(node: ast.expr, module: str) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Tuple):
        return tuple(_value(element, module) for element in node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _value(node.left, module) + _value(node.right, module)  # type: ignore[operator]
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in _ENUMS:
        try:
            return _ENUMS[node.value.id][node.attr]
        except KeyError:
            raise Unreadable(f"{module}: unknown {node.value.id}.{node.attr}") from None
    if isinstance(node, ast.Name) and node.id.isupper() and isinstance(getattr(base, node.id, None), (str, tuple)):
        return getattr(base, node.id)
    raise Unreadable(f"{module}: metadata value {ast.dump(node)[:60]} is not a literal")
