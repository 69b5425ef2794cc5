"""Node positions with less bookkeeping than libcst's ``PositionProvider``.

Same results (a test compares them), but a token without a line break only moves
the column, instead of going through a regular-expression split, and spans are
kept as plain tuples until a rule asks for one. Positions are still computed for
a whole module at once, and only for modules that have a finding.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Optional

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst._position import CodePosition, CodeRange


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


class Positions:
    """A mapping node -> ``CodeRange`` for one module, built on first use."""

    def __init__(self, module: cst.Module) -> None:
        self._module = module
        self._spans: dict[cst.CSTNode, tuple[int, int, int, int]] | None = None

    def _resolved(self) -> dict[cst.CSTNode, tuple[int, int, int, int]]:
        if self._spans is None:
            state = _State(self._module)
            self._module._codegen(state)
            self._spans = state.spans
        return self._spans

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        line, column, end_line, end_column = self._resolved()[node]
        return CodeRange(CodePosition(line, column), CodePosition(end_line, end_column))

    def get(self, node: cst.CSTNode, default=None):
        try:
            return self[node]
        except KeyError:
            return default

    def __contains__(self, node: cst.CSTNode) -> bool:
        return node in self._resolved()
