"""Small builders for surgical libcst edits that keep the user's layout."""

from __future__ import annotations

import libcst as cst

NO_SPACE = cst.SimpleWhitespace("")
ONE_SPACE = cst.SimpleWhitespace(" ")


def string_literal(value: str) -> cst.SimpleString:
    return cst.SimpleString(f'"{value}"')


def _comma_like(call: cst.Call) -> cst.Comma:
    """A comma whose following whitespace matches how the call lays out its arguments."""
    layout = call.whitespace_before_args
    if isinstance(layout, cst.ParenthesizedWhitespace):
        # Same indentation for the next argument, without repeating a comment after "(".
        return cst.Comma(
            whitespace_after=cst.ParenthesizedWhitespace(
                first_line=cst.TrailingWhitespace(), indent=layout.indent, last_line=layout.last_line
            )
        )
    if len(call.args) > 1 and isinstance(call.args[0].comma, cst.Comma):
        return cst.Comma(whitespace_after=call.args[0].comma.whitespace_after)
    return cst.Comma(whitespace_after=ONE_SPACE)


def keywordize(arg: cst.Arg, name: str) -> cst.Arg:
    """``value`` -> ``name=value`` keeping the argument's comma and whitespace."""
    return arg.with_changes(
        keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=NO_SPACE, whitespace_after=NO_SPACE),
    )


def insert_arg(call: cst.Call, index: int, arg: cst.Arg) -> cst.Call:
    """Insert ``arg`` at ``index`` among the call's arguments, matching its comma style."""
    args = list(call.args)
    if not args:
        return call.with_changes(args=[arg.with_changes(comma=cst.MaybeSentinel.DEFAULT)])
    if index >= len(args):
        last = args[-1]
        trailing = last.comma
        # The space before ``)`` (a line break in a call laid out over lines) moves to the new last argument.
        args[-1] = last.with_changes(comma=_comma_like(call), whitespace_after_arg=cst.SimpleWhitespace(""))
        args.append(arg.with_changes(comma=trailing, whitespace_after_arg=last.whitespace_after_arg))
        return call.with_changes(args=args)
    args.insert(index, arg.with_changes(comma=_comma_like(call)))
    return call.with_changes(args=args)


def positional(value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(value=value)


def keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(
        value=value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=NO_SPACE, whitespace_after=NO_SPACE),
    )


def first_keyword_index(call: cst.Call) -> int:
    for index, arg in enumerate(call.args):
        if arg.keyword is not None or arg.star:
            return index
    return len(call.args)


def remove_arg(call: cst.Call, target: cst.Arg) -> cst.Call:
    """Drop one argument, keeping the previous argument's comma tidy."""
    args = list(call.args)
    index = next(i for i, a in enumerate(args) if a is target)
    removed = args.pop(index)
    if index == len(args) and args:
        # The removed one was last: the new last argument takes its trailing comma.
        args[-1] = args[-1].with_changes(comma=removed.comma)
    return call.with_changes(args=args)


def dotted_expression(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


def attribute_chain(head: cst.BaseExpression, *names: str) -> cst.BaseExpression:
    node = head
    for name in names:
        node = cst.Attribute(value=node, attr=cst.Name(name))
    return node


def movable(stmt: cst.CSTNode) -> cst.CSTNode:
    """``stmt`` ready to be re-inserted elsewhere: keeps its comment lines, drops blank ones."""
    leading = getattr(stmt, "leading_lines", None)
    if leading is None:
        return stmt
    return stmt.with_changes(leading_lines=[line for line in leading if line.comment is not None])


def single_simple_statement(stmt: cst.CSTNode | None) -> bool:
    """A ``SimpleStatementLine`` holding exactly one small statement (safe to move or insert after)."""
    return isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1


def insert_after(stmt: cst.CSTNode, new: cst.CSTNode) -> cst.FlattenSentinel:
    """Replacement for ``stmt`` that keeps it and adds ``new`` right after it."""
    return cst.FlattenSentinel([stmt, new])  # type: ignore[list-item]


def insert_before(stmt: cst.CSTNode, new: list[cst.BaseStatement]) -> cst.FlattenSentinel:
    """Replacement for ``stmt`` that adds the ``new`` statements right before it.

    Comments and blank lines above ``stmt`` stay above the inserted lines, so a comment that
    introduces a block still introduces it.
    """
    leading = getattr(stmt, "leading_lines", None)
    if leading is None or not new:
        return cst.FlattenSentinel([*new, stmt])  # type: ignore[list-item]
    first = new[0].with_changes(leading_lines=leading)
    return cst.FlattenSentinel([first, *new[1:], stmt.with_changes(leading_lines=())])  # type: ignore[list-item]


def movable_statement(model, event) -> cst.CSTNode | None:
    """The statement holding ``event``'s call when it can be moved away: one simple statement
    that is the call alone and not the only statement of its block."""
    stmt = event.ctx.stmt
    if not single_simple_statement(stmt):
        return None
    assert isinstance(stmt, cst.SimpleStatementLine)
    if not isinstance(stmt.body[0], cst.Expr) or stmt.body[0].value is not event.call:
        return None
    found = model.tree.statement_block(stmt)
    if found is None or len(found[1]) < 2:
        return None
    return stmt


def anchor_statement(event) -> cst.CSTNode | None:
    """The statement holding ``event``'s call, when a statement can be inserted after it (one
    simple statement that neither returns nor raises)."""
    stmt = event.ctx.stmt
    if not single_simple_statement(stmt):
        return None
    assert isinstance(stmt, cst.SimpleStatementLine)
    if isinstance(stmt.body[0], (cst.Return, cst.Raise)):
        return None
    return stmt


def parse_statement(code: str, like: cst.CSTNode | None = None) -> cst.BaseStatement:
    """A statement parsed from ``code`` (no leading comments)."""
    return cst.parse_statement(code)


def replace_within(root: cst.CSTNode, changes: dict) -> cst.CSTNode:
    """``root`` with nested nodes replaced (or removed with ``RemovalSentinel.REMOVE``).

    For a fix that edits inside a node it also replaces as a whole (hoisting a statement out of
    a loop and inserting it before that loop).
    """
    from amplint.fix.apply import ReplaceNodes

    return root.visit(ReplaceNodes(changes))  # type: ignore[return-value]


def move_after(outer: cst.CSTNode, stmt: cst.CSTNode) -> dict:
    """Changes that take ``stmt`` out of the compound statement ``outer`` (a loop) and put it
    right after ``outer``, keeping its comments."""
    return {outer: cst.FlattenSentinel([replace_within(outer, {stmt: cst.RemovalSentinel.REMOVE}), movable(stmt)])}


def move_before(outer: cst.CSTNode, stmt: cst.CSTNode) -> dict:
    """Changes that take ``stmt`` out of ``outer`` and put it right before it (hoisting)."""
    return {outer: cst.FlattenSentinel([stmt, replace_within(outer, {stmt: cst.RemovalSentinel.REMOVE})])}


def remove_statement(model, stmt: cst.CSTNode):
    """Replacement for ``stmt`` that deletes it, or ``pass`` when it is its block's only statement."""
    block = model.tree.statement_block(stmt)
    if block is not None and len(block[1]) > 1:
        return cst.RemovalSentinel.REMOVE
    return stmt.with_changes(body=[cst.Pass()])


def string_literal_like(like: cst.SimpleString, value: str) -> cst.SimpleString:
    """``value`` as a string literal in the quote character of ``like`` (double quotes for
    triple-quoted or prefixed literals)."""
    quote = like.quote if like.quote in ("'", '"') else '"'
    return cst.SimpleString(f"{quote}{value}{quote}")


def float32_like(value: cst.BaseExpression) -> cst.BaseExpression | None:
    """A half dtype written as float32: ``torch.bfloat16`` -> ``torch.float32`` (same module
    spelling), ``"bfloat16"`` -> ``"float32"``; ``None`` for a bare name (``from torch import
    bfloat16``), which has no float32 beside it."""
    if isinstance(value, cst.Attribute):
        return value.with_changes(attr=cst.Name("float32"))
    if isinstance(value, cst.SimpleString):
        return value.with_changes(value=f"{value.prefix}{value.quote}float32{value.quote}")
    return None
