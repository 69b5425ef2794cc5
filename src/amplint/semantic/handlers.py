"""Exception handlers: which ``try`` statements catch what a point of their body raises, and how
control leaves a handler."""

from __future__ import annotations

import libcst as cst

import amplint.semantic.syntax as S
from amplint.semantic.records import Context

# Handlers that catch a RuntimeError besides one that names it.
_RUNTIME_ERROR_BASES = frozenset({"RuntimeError", "Exception", "BaseException"})
_EXITS = (cst.Continue, cst.Break, cst.Return, cst.Raise)


def catches(handler: cst.ExceptHandler, names: frozenset[str]) -> bool:
    """The handler catches an exception of one of the classes ``names`` (a bare ``except``
    catches everything; ``except (ValueError, RuntimeError)`` counts)."""
    if handler.type is None:
        return True
    types = [e.value for e in handler.type.elements] if isinstance(handler.type, cst.Tuple) else [handler.type]
    return any((S.dotted(t) or "").rsplit(".", 1)[-1] in names for t in types)


def _last_statement(block: cst.BaseSuite) -> cst.BaseSmallStatement | None:
    if isinstance(block, cst.IndentedBlock):
        last = block.body[-1] if block.body else None
        if not isinstance(last, cst.SimpleStatementLine):
            return None
        return last.body[-1] if last.body else None
    if isinstance(block, cst.SimpleStatementSuite):
        return block.body[-1] if block.body else None
    return None


def reraises(handler: cst.ExceptHandler) -> bool:
    """The handler ends with a ``raise``: the exception (or another) goes on up."""
    return isinstance(_last_statement(handler.body), cst.Raise)


def leaves_block(handler: cst.ExceptHandler) -> bool:
    """The handler ends with ``continue``, ``break``, ``return`` or ``raise``: the statements after
    the ``try`` do not run on its path."""
    return isinstance(_last_statement(handler.body), _EXITS)


class HandlerQueries:
    """The ``model.handlers`` service of :class:`~amplint.semantic.model.SemanticModel`."""

    def __init__(self, model: "SemanticModel") -> None:
        self.model = model

    def handlers_catching_runtime_error(self, ctx: Context) -> list[tuple[cst.Try, cst.ExceptHandler]]:
        """The ``try`` statements of the same function whose body holds the point ``ctx``, innermost
        first, each with its first handler that catches a ``RuntimeError`` and does not re-raise it."""
        out = []
        for branch in reversed(ctx.branches):
            if not isinstance(branch.node, cst.Try) or branch.part != "body":
                continue
            for handler in branch.node.handlers:
                if catches(handler, _RUNTIME_ERROR_BASES):
                    if not reraises(handler):
                        out.append((branch.node, handler))
                    break
        return out
