"""Node positions with less bookkeeping than libcst's ``PositionProvider``.

Same results (a test compares them), but a token without a line break only moves
the column, instead of going through a regular-expression split, and spans are
kept as plain tuples until a rule asks for one. Positions are computed for a whole
module at once, and only for modules where something asks for one; given the module's
text, a one-line expression whose code occurs once in it is placed from that
occurrence, without generating the module's code (the summary of a file asks the
line of each ``torch.save``, and that codegen was a third of linting a trainer).
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Iterator, Optional

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst._position import CodePosition, CodeRange


# Expressions whose position is the span of their own code when they have no parentheses (an
# element of a list or a call is not one: its position leaves out the comma its code holds).
_PLACED_BY_CODE = frozenset({cst.Call, cst.Name, cst.Attribute, cst.Subscript})


class _State(CodegenState):
    def __init__(self, module: cst.Module) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.line = 1
        self.column = 0
        self.stack: list[tuple[int, int]] = []
        self.spans: dict[cst.CSTNode, tuple[int, int, int, int]] = {}

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        if "\n" not in value and "\r" not in value:
            self.column += len(value)
            return
        value = value.replace("\r\n", "\n").replace("\r", "\n")
        self.line += value.count("\n")
        self.column = len(value) - value.rfind("\n") - 1

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.stack.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self.stack.pop()
        if node not in self.spans:  # a syntactic position recorded first wins
            self.spans[node] = (start[0], start[1], self.line, self.column)

    @contextmanager
    def record_syntactic_position(
        self, node: cst.CSTNode, *, start_node: Optional[cst.CSTNode] = None, end_node: Optional[cst.CSTNode] = None
    ) -> Iterator[None]:
        start = (self.line, self.column)
        try:
            yield
        finally:
            end = (self.line, self.column)
            if start_node is not None:
                start = self.spans[start_node][:2]
            if end_node is not None:
                end = self.spans[end_node][2:]
            self.spans[node] = (start[0], start[1], end[0], end[1])


def _position_in(text: str, offset: int) -> CodePosition:
    """Line and column of a character offset in a text whose lines end with ``\\n``."""
    return CodePosition(text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset) - 1)


class Positions:
    """A mapping node -> ``CodeRange`` for one module, built on first use."""

    def __init__(self, module: cst.Module, text: str | None = None) -> None:
        """``text``: the code of ``module`` (the text it was parsed from), when the caller has it."""
        self._module = module
        self._text = text
        self._spans: dict[cst.CSTNode, tuple[int, int, int, int]] | None = None

    def _resolved(self) -> dict[cst.CSTNode, tuple[int, int, int, int]]:
        if self._spans is None:
            state = _State(self._module)
            self._module._codegen(state)
            self._spans = state.spans
        return self._spans

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        if self._spans is None and self._text is not None:
            found = self._placed_by_its_code(node)
            if found is not None:
                return found
        line, column, end_line, end_column = self._resolved()[node]
        return CodeRange(CodePosition(line, column), CodePosition(end_line, end_column))

    def _placed_by_its_code(self, node: cst.CSTNode) -> CodeRange | None:
        """Where a call, name, attribute or subscript without parentheses is, when its code occurs
        once in the module's text. The module's code is its nodes' codes in order, so the one
        occurrence is the node's, and without parentheses such an expression's position is its
        code's span. Alone, an expression's code lacks only the indentation its block gives each
        continuation line (libcst writes it after a line break), so a code of several lines is
        looked for with any indentation after each break."""
        if type(node) not in _PLACED_BY_CODE or node.lpar or node.rpar:
            return None
        code = self._module.code_for_node(node)
        text = self._text
        if not code or "\r" in code or "\r" in text:
            return None
        if "\n" not in code:
            at = text.find(code)
            if at < 0 or text.find(code, at + 1) >= 0:
                return None
            end = at + len(code)
        else:
            pattern = re.compile("\n[ \t]*".join(map(re.escape, code.split("\n"))))
            found = [match.span() for _, match in zip(range(2), pattern.finditer(text))]
            if len(found) != 1:
                return None
            ((at, end),) = found
        return CodeRange(_position_in(text, at), _position_in(text, end))

    def get(self, node: cst.CSTNode, default=None):
        try:
            return self[node]
        except KeyError:
            return default

    def __contains__(self, node: cst.CSTNode) -> bool:
        return node in self._resolved()
