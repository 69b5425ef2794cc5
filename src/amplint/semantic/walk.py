"""A read-only walk over libcst nodes that follows the visit_/leave_ protocol without rebuilding.

libcst's own traversal rebuilds every node it passes (dataclass construction and validation),
which costs more than parsing; :class:`Walker` visits each node's fields in source order,
skipping whitespace and punctuation, and numbers every node's entry and exit so that
containment is two integer comparisons.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

_VISIT: dict[tuple[type, type], tuple] = {}
_FIELDS: dict[type, tuple[str, ...]] = {}
_SKIPPED_TYPES = (
    cst.BaseParenthesizableWhitespace, cst.TrailingWhitespace, cst.EmptyLine, cst.Newline, cst.Comment,
    cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace,
    cst.RightCurlyBrace, cst.Comma, cst.Dot, cst.Colon, cst.Semicolon, cst.AssignEqual,
)


_WALKED: dict[type, bool] = {}  # type -> is a node the walk enters (cached: CSTNode checks go through ABCs)


def _walked(kind: type) -> bool:
    walked = _WALKED.get(kind)
    if walked is None:
        walked = _WALKED[kind] = issubclass(kind, cst.CSTNode) and not issubclass(kind, _SKIPPED_TYPES)
    return walked


def _children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Child nodes in field order (source order for everything the facts pass reads)."""
    kind = type(node)
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = tuple(
            f.name for f in dataclasses.fields(node)
            if not f.name.startswith(("whitespace", "lpar", "rpar", "leading_lines", "lines_after", "header", "footer", "semicolon", "comma"))
        )
    out = []
    for name in names:
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            out.extend(item for item in value if _walked(type(item)))
        elif _walked(kind):
            out.append(value)
    return out




class Walker:
    """Calls ``visit_<Type>``/``leave_<Type>`` methods of a subclass over a tree, once each.

    ``visit_`` returning False skips the node's children (the method may walk some itself).
    """

    def __init__(self) -> None:
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}  # statement/block -> its owner
        self.spans: dict[cst.CSTNode, list[int]] = {}  # node -> [enter, exit] walk numbers
        self._tick = 0

    def walk(self, node: cst.CSTNode) -> None:
        kind = type(node)
        visit = _VISIT.get((type(self), kind))
        if visit is None:
            name = kind.__name__
            visit = _VISIT[(type(self), kind)] = (getattr(type(self), f"visit_{name}", None), getattr(type(self), f"leave_{name}", None))
        enter, leave = visit
        self._tick += 1
        span = self.spans[node] = [self._tick, 0]
        if kind is cst.IndentedBlock or kind is cst.SimpleStatementSuite:
            for child in node.body:
                self.parents[child] = node
        if enter is None or enter(self, node) is not False:
            for child in _children(node):
                self.walk(child)
        if leave is not None:
            leave(self, node)
        self._tick += 1
        span[1] = self._tick
