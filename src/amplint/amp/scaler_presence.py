"""Whether a GradScaler that may be enabled is at work around a point of the training step."""

from __future__ import annotations

from amplint.amp.events import EventKind
from amplint.semantic.records import CallSite, Scope

# Calls that show a scaler at work before a point (its gradients are scaled) or after it.
_SCALED_BEFORE = (EventKind.SCALE_BACKWARD, EventKind.UNSCALE)
_STEPS_AFTER = (EventKind.SCALER_STEP,)


class ScalerPresence:
    """The ``facts.scaler_presence`` service of :class:`~amplint.amp.facts.FileFacts`; asks ``events_by_scope``, ``scalers`` and the call graph."""

    def __init__(self, facts: "FileFacts") -> None:
        self.facts = facts

    def scaler_in_use_at(self, scope: Scope, order: int) -> str | None:
        """The scaler (by key) that scales a backward or unscales before statement ``order`` of
        ``scope``, or steps after it, unless every construction of it is ``enabled=False``."""
        for event in self.facts.timeline.events_by_scope.get(scope, []):
            if event.kind not in (*_SCALED_BEFORE, *_STEPS_AFTER):
                continue
            if event.scaler not in self.facts.scaling.scalers or self.facts.scaling.scaler_provably_disabled(event.scaler, scope):
                continue
            if (event.order < order and event.kind in _SCALED_BEFORE) or (event.order > order and event.kind in _STEPS_AFTER):
                return event.scaler
        return None

    def scaler_in_use_around(self, site: CallSite) -> str | None:
        """:meth:`scaler_in_use_at` the call, else at the first call of the same-file function
        holding it (from another scope) that has one."""
        scaler = self.scaler_in_use_at(site.ctx.scope, site.ctx.order)
        if scaler is not None:
            return scaler
        function = self.facts.callgraph.function_of(site.ctx.scope)
        if function is None:
            return None
        for caller in self.facts.callgraph.callers_of(function):
            if caller.ctx.scope is not site.ctx.scope:
                scaler = self.scaler_in_use_at(caller.ctx.scope, caller.ctx.order)
                if scaler is not None:
                    return scaler
        return None
