"""A rule module's metadata, read from its source with ``ast``, without running the module.

The metadata fields (code, name, summary, severity, fix safety, default, triggers, focus tokens)
are literal class attributes, so only the rule class up to its last metadata line is parsed (the
docstring and the metadata): the examples and the check logic are most of the parsing cost.
A value that is not a literal, a constant of ``amplint.rules.base`` or a ``Severity`` /
``FixSafety`` member makes the module :class:`Unreadable`; the catalog then imports it.
"""

from __future__ import annotations

import ast
import itertools
import re
import warnings

from amplint.model import FixSafety, Severity
import amplint.rules.base as base
from amplint.rules.metadata import RuleInfo

FIELDS = ("code", "name", "summary", "severity", "fix_safety", "fix_withheld", "default_enabled", "triggers", "requires", "requires_match", "focus_tokens")
_ENUMS = {"FixSafety": FixSafety, "Severity": Severity}
_RULE_CLASS = re.compile(r"^class[ \t]+\w+[ \t]*\([ \t]*Rule[ \t]*\)[ \t]*:", re.MULTILINE)


class Unreadable(Exception):
    """The rule's metadata is not plain enough to read without running its module."""


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
