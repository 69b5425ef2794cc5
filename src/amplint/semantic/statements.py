"""Statements in their blocks: what runs right after a statement."""

from __future__ import annotations

import libcst as cst


class StatementQueries:
    """Mixed into :class:`~amplint.amp.facts.FileFacts`; uses the model's ``statement_block``."""

    def next_statement(self, stmt: cst.CSTNode | None) -> cst.CSTNode | None:
        """The statement right after ``stmt`` in its block, when ``stmt`` is one simple statement
        (``a; b`` on one line has no single successor)."""
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
            return None
        found = self.statement_block(stmt)
        if found is None:
            return None
        _, body = found
        for index, item in enumerate(body):
            if item is stmt:
                return body[index + 1] if index + 1 < len(body) else None
        return None
