"""Overflow checks written by hand: an ``if`` on non-finite gradients that skips the rest of the
iteration, between a scaled backward and its scaler's ``step``/``update()``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import libcst as cst

from amplint.amp.events import Event, EventKind
from amplint.semantic.records import Context

_NON_FINITE = re.compile(r"\b(isfinite|isnan|isinf|nan|inf)\b")
# the checked value is the gradients' (``grad_norm``, ``total_norm``), not the loss: a NaN loss
# is the forward's overflow, which the loss scale does not cause
_GRADIENT_WORDS = re.compile(r"grad|norm", re.IGNORECASE)


@dataclass(eq=False)
class OverflowSkip:
    """``if not torch.isfinite(grad_norm): ...; continue`` that leaves ``backward``'s scaler
    without a ``step`` and an ``update()`` on that pass."""

    test: cst.If
    ctx: Context
    backward: Event  # the scaled backward before it
    step: Event  # the scaler's step it skips
    unscaled: bool  # ``unscale_`` ran before it in the iteration: the next one raises


def _skips_rest_of_iteration(body: cst.BaseSuite) -> bool:
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    for statement in statements:
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            if any(isinstance(small, cst.Continue) for small in statement.body):
                return True
    return False


class OverflowFacts:
    """The ``facts.overflow`` service of :class:`~amplint.amp.facts.FileFacts`."""

    def __init__(self, facts: "FileFacts") -> None:
        self.facts = facts

    @cached_property
    def overflow_skips(self) -> list[OverflowSkip]:
        out: list[OverflowSkip] = []
        for node, ctx in self.facts.records.if_statements:
            loop = self.facts.training.iteration_loop(ctx)
            # The test's code is generated last: most ``if``s of a file are outside a training
            # loop or skip nothing.
            if loop is None or not _skips_rest_of_iteration(node.body):
                continue
            test = self.facts.code(node.test)
            if not (_NON_FINITE.search(test) and _GRADIENT_WORDS.search(test)):
                continue
            flow = self.facts.control_flow
            events = [e for e in self.facts.timeline.events_by_scope.get(ctx.scope, []) if loop in e.ctx.loops]
            backwards = [e for e in events if e.kind is EventKind.SCALE_BACKWARD and flow.reaches(e.ctx, ctx)]
            nearest = flow.last_before([e.ctx for e in backwards], ctx)
            backward = next((e for e in reversed(backwards) if any(e.ctx is c for c in nearest)), None)
            if backward is None or self.facts.scaling.scaler_provably_disabled(backward.scaler, ctx.scope):
                continue
            step = next(
                (e for e in events if e.kind is EventKind.SCALER_STEP and e.scaler == backward.scaler and flow.reaches(ctx, e.ctx)),
                None,
            )
            handled = any(
                e.kind in (EventKind.UPDATE, EventKind.SCALER_STEP) and e.scaler == backward.scaler and self.facts.tree.contains(node.body, e.call)
                for e in events
            )
            unscaled = any(
                e.kind is EventKind.UNSCALE and e.scaler == backward.scaler and flow.between(backward.ctx, e.ctx, ctx) for e in events
            )
            if step is not None and not handled:
                out.append(OverflowSkip(node, ctx, backward, step, unscaled))
        return out
