"""Statements in their blocks: what runs right after a statement, and what a simple one assigns."""

from __future__ import annotations

import libcst as cst

from amplint.semantic.records import CallSite
from amplint.semantic.syntax import dotted


class StatementQueries:
    """The ``model.statements`` service of :class:`~amplint.semantic.model.SemanticModel`; uses the model's ``statement_block``."""

    def __init__(self, model: "SemanticModel") -> None:
        self.model = model

    def next_statement(self, stmt: cst.CSTNode | None) -> cst.CSTNode | None:
        """The statement right after ``stmt`` in its block, when ``stmt`` is one simple statement
        (``a; b`` on one line has no single successor)."""
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
            return None
        found = self.model.tree.statement_block(stmt)
        if found is None:
            return None
        _, body = found
        for index, item in enumerate(body):
            if item is stmt:
                return body[index + 1] if index + 1 < len(body) else None
        return None

    def assigned_name(self, site: CallSite) -> str | None:
        """The one dotted name a call's value is assigned to: ``model`` for ``model = load(...)``."""
        stmt = site.ctx.stmt
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
            assign = stmt.body[0]
            if assign.value is site.node and len(assign.targets) == 1:
                return dotted(assign.targets[0].target)
        return None
