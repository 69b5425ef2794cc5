"""Edits to dict displays that keep the file's style: its quotes, its commas, its layout."""

from __future__ import annotations

import libcst as cst

from amplint.fix.edits import ONE_SPACE


def quote_of(node: cst.CSTNode | None) -> str:
    """The quote character a string literal uses (``'`` or ``"``); ``"`` for anything else."""
    if isinstance(node, cst.SimpleString) and node.value.lstrip("rRbBuU").startswith("'"):
        return "'"
    return '"'


def quoted(key: str, like: cst.CSTNode | None) -> str:
    """``key`` as a string literal quoted like the literal ``like``."""
    quote = quote_of(like)
    return f"{quote}{key}{quote}"


def append_item(node: cst.Dict, key: str, value: cst.BaseExpression) -> cst.Dict:
    """``node`` with ``key: value`` added last (``key`` is the key's source, quotes included).

    The new item is separated like the existing ones (a multi-line dict stays one item per
    line) and takes over the trailing comma, if the dict had one.
    """
    elements = list(node.elements)
    new = cst.DictElement(key=cst.SimpleString(key), value=value)
    if not elements:
        return node.with_changes(elements=[new])
    last = elements[-1]
    if len(elements) > 1 and isinstance(elements[-2].comma, cst.Comma):
        between = elements[-2].comma
    elif isinstance(node.lbrace.whitespace_after, cst.ParenthesizedWhitespace):
        between = cst.Comma(whitespace_after=node.lbrace.whitespace_after)
    else:
        between = cst.Comma(whitespace_after=ONE_SPACE)
    elements[-1] = last.with_changes(comma=between)
    elements.append(new.with_changes(comma=last.comma))
    return node.with_changes(elements=elements)
