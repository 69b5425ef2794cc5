"""Control flow questions: containment, branches that exclude each other, blocks and statements."""

from __future__ import annotations

import libcst as cst

from amplint.semantic.records import Branch, Context
from amplint.semantic.syntax import flat_text

_NEGATED = {cst.IsNot: "is", cst.NotEqual: "==", cst.NotIn: "in"}
_POSITIVE = {cst.Is: "is", cst.Equal: "==", cst.In: "in"}


class FlowQueries:
    """The ``model.tree`` service of :class:`~amplint.semantic.model.SemanticModel`; reads ``spans`` and ``parents``,
    and uses its ``position`` and ``code``."""

    def __init__(self, model: "SemanticModel") -> None:
        self.model = model

    # -- containment
    def contains(self, outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
        """``inner`` is ``outer`` or lies inside it.

        Decided from the walk's enter/exit numbering, not from source positions:
        positions cost a full code generation of the module.
        """
        o, i = self.model.spans.get(outer), self.model.spans.get(inner)
        if o is None or i is None:
            try:
                a, b = self.model.position(outer), self.model.position(inner)
            except KeyError:
                return False
            return (a.start.line, a.start.column) <= (b.start.line, b.start.column) and (
                b.end.line, b.end.column) <= (a.end.line, a.end.column)
        return o[0] <= i[0] and i[1] <= o[1]

    def within(self, inner: cst.CSTNode, outer: cst.CSTNode) -> bool:
        """``inner`` lies inside ``outer`` (or is it)."""
        return self.contains(outer, inner)

    # -- statements and blocks
    def parent_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.model.parents.get(node)

    def statement_block(self, stmt: cst.CSTNode) -> tuple[cst.CSTNode, list[cst.CSTNode]] | None:
        """The block holding ``stmt`` and that block's statements."""
        block = self.model.parents.get(stmt)
        if block is None:
            return None
        body = getattr(block, "body", None)
        if isinstance(body, (list, tuple)):
            return block, list(body)
        return None

    def statement_in_block(self, node: cst.CSTNode, block: cst.CSTNode) -> cst.CSTNode | None:
        """The statement of ``block`` that holds ``node`` (a statement), if any."""
        current: cst.CSTNode | None = node
        seen = 0
        while current is not None and seen < 200:
            parent = self.model.parents.get(current)
            if parent is block:
                return current
            current = parent
            seen += 1
        return None

    def in_one_block(self, statements: list[cst.CSTNode | None]) -> bool:
        """The statements (``None`` ones left out) all sit in the same block."""
        blocks = [self.statement_block(stmt) for stmt in statements if stmt is not None]
        return all(block == blocks[0] for block in blocks)

    def top_statement_through_ifs(self, stmt: cst.CSTNode | None, body: cst.CSTNode) -> cst.CSTNode | None:
        """The statement of the block ``body`` that holds ``stmt``, when only ``if`` / ``elif`` /
        ``else`` blocks lie between them (a statement nested in a loop or ``with`` has none)."""
        node = stmt
        while node is not None:
            block = self.model.parents.get(node)
            if block is body:
                return node
            owner = self.model.parents.get(block) if block is not None else None
            if isinstance(owner, cst.Else):
                owner = self.model.parents.get(owner)
            if not isinstance(owner, cst.If):
                return None
            node = owner
        return None

    # -- branches
    def flat(self, node: cst.CSTNode) -> str:
        """The node's source without whitespace or redundant parentheses."""
        return flat_text(self.model.code(node))

    def condition_key(self, test: cst.BaseExpression) -> tuple[str, bool]:
        """A branch test as comparable text, and whether it is negated.

        ``not x`` / ``x is not None`` / ``a != b`` / ``k not in d`` give the text of the positive
        form with ``negated=True``, so ``if scaler is None`` and ``if scaler is not None`` compare.
        """
        negated = False
        while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test = test.expression
            negated = not negated
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            comparison = test.comparisons[0]
            for table, flips in ((_NEGATED, True), (_POSITIVE, False)):
                for kind, text in table.items():
                    if isinstance(comparison.operator, kind):
                        return f"{self.flat(test.left)} {text} {self.flat(comparison.comparator)}", negated != flips
        return self.flat(test), negated

    def branch_key(self, branch: Branch) -> tuple[str, bool] | None:
        """(test text, runs when the test is true) for an ``if``/``elif``/``else`` branch."""
        if isinstance(branch.node, cst.If) and branch.part in ("body", "orelse"):
            text, negated = self.condition_key(branch.node.test)
            return text, (not negated) if branch.part == "body" else negated
        return None

    def exclusive(self, a: Context, b: Context) -> bool:
        """True when ``a`` and ``b`` never run in the same pass through their function.

        Opposite parts of one ``if`` (``if``/``elif``/``else`` chains included), a ``try`` handler
        and its ``else``, or opposite parts of two ``if`` statements with the same test
        (``if use_amp: ... else: ...`` written twice, ``if scaler is None`` / ``if scaler is not None``).
        """
        if a.scope is not b.scope:
            return False
        for ba in a.branches:
            for bb in b.branches:
                if ba.node is bb.node:
                    if ba.part != bb.part and (
                        {ba.part, bb.part} == {"body", "orelse"} or {ba.part, bb.part} == {"handler", "orelse"}
                    ):
                        return True
                    continue
                ka, kb = self.branch_key(ba), self.branch_key(bb)
                if ka is not None and kb is not None and ka[0] == kb[0] and ka[1] != kb[1]:
                    return True
        return False

    def on_path(self, a: Context, b: Context) -> bool:
        """``a`` and ``b`` are in one function and may run in the same pass through it."""
        return a.scope is b.scope and not self.exclusive(a, b)

    def under_same_condition(self, ctx: Context, branch: Branch) -> bool:
        """``ctx`` runs only when ``branch`` runs: inside it, or inside an ``if`` with the same test and part."""
        key = self.branch_key(branch)
        for own in ctx.branches:
            if own == branch:
                return True
            if key is not None and self.branch_key(own) == key:
                return True
        return False
