"""Compatibility fallbacks: code that runs only where a newer API is missing."""

from __future__ import annotations

import libcst as cst

from amplint.semantic.records import Context


class CompatFacts:
    """Mixed into :class:`~amplint.amp.facts.FileFacts`."""

    def _mentions(self, node: cst.CSTNode | None, predicate) -> bool:
        if node is None:
            return False
        return any(
            (q := self.qualname(ref.node, ref.ctx.scope)) is not None and predicate(q)
            for ref in self.references_within(node)
        )

    def is_compat_fallback(self, node: cst.CSTNode, ctx: Context, new_api) -> bool:
        """``node`` runs only when a newer API is unavailable.

        True in the ``except`` of a ``try`` whose body uses the new API, in the branch of
        an ``if``/conditional expression whose other branch uses it, and after
        ``if <new API available>: ... return`` (a version check alone proves nothing:
        the newer branch may still use the old names).
        """
        for branch in ctx.branches:
            owner = branch.node
            if isinstance(owner, cst.Try) and branch.part == "handler" and self._mentions(owner.body, new_api):
                return True
            if isinstance(owner, cst.If) and branch.part in ("body", "orelse"):
                other = owner.orelse if branch.part == "body" else owner.body
                if self._mentions(other, new_api):
                    return True
        for expression in self.records.conditional_expressions:
            if not self.contains(expression, node) or self.contains(expression.test, node):
                continue
            other = expression.orelse if self.contains(expression.body, node) else expression.body
            if self._mentions(other, new_api):
                return True
        for statement, if_ctx in self.records.if_statements:
            if if_ctx.scope is not ctx.scope or if_ctx.order > ctx.order or self.contains(statement, node):
                continue
            body = statement.body.body if isinstance(statement.body, cst.IndentedBlock) else ()
            returns = any(
                isinstance(small, cst.Return)
                for line in body[-1:]
                if isinstance(line, cst.SimpleStatementLine)
                for small in line.body
            )
            if returns and self._mentions(statement.body, new_api):
                return True
        return False
