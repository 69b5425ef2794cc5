"""Who scales the loss when no GradScaler is in sight, and what a backwarded loss was computed under."""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from amplint.amp.events import Event

# Frameworks that scale the loss themselves: their backward replaces ``loss.backward()``.
FRAMEWORK_BACKWARD_RECEIVERS = ("accelerator", "fabric", "engine", "model_engine", "deepspeed", "trainer", "strategy")
FRAMEWORK_LOSS_CALLS = frozenset({"scale_loss", "manual_backward", "backward_pass"})
FRAMEWORK_MODULES = ("apex", "deepspeed", "accelerate", "lightning", "pytorch_lightning", "colossalai", "megatron")


class LossScalingFacts:
    """The ``facts.loss_scaling`` service of :class:`~amplint.amp.facts.FileFacts`."""

    def __init__(self, facts: "FileFacts") -> None:
        self.facts = facts

    @cached_property
    def loss_scaled_elsewhere(self) -> bool:
        """Something this file does not show as a GradScaler may scale the loss: a framework
        import (apex, DeepSpeed, accelerate, Lightning ...), a framework backward
        (``accelerator.backward``, ``self.manual_backward``, ``amp.scale_loss``), or a scaler
        handed in (a ``scaler`` / ``loss_scaler`` parameter, attribute or name)."""
        for record in self.facts.imports:
            if any(target.split(".")[0] in FRAMEWORK_MODULES for _, _, target in record.aliases):
                return True
        for site in self.facts.calls:
            parts = (site.func_text or "").split(".")
            if parts[-1] in FRAMEWORK_LOSS_CALLS:
                return True
            if parts[-1] == "backward" and len(parts) > 1 and any(
                w in p.lower() for p in parts[:-1] for w in FRAMEWORK_BACKWARD_RECEIVERS
            ):
                return True
        if any("scaler" in p.lower() for function in self.facts.functions for p in function.params):
            return True
        return any("scaler" in p.lower() for ref in self.facts.references for p in ref.parts)

    def loss_computed_under(self, backward: Event, withs: list[cst.With]) -> bool:
        """The tensor ``backward`` backpropagates was computed in one of the ``with`` blocks
        ``withs`` before it: the backward sits in one, its receiver is assigned in one, or is
        assigned from a name assigned in one (``out = model(x)`` inside, ``loss = crit(out, y)`` after)."""
        if any(w in backward.ctx.withs for w in withs):
            return True
        receiver = backward.receiver
        if receiver is None or "." in receiver or "scale" in receiver.lower():
            return False
        flow = self.facts.control_flow
        for assignment in flow.reaching_assignments(receiver, backward.ctx):
            if any(w in assignment.ctx.withs for w in withs):
                return True
            if assignment.value is None:
                continue
            for ref in self.facts.references_within(assignment.value):
                if any(any(w in inner.ctx.withs for w in withs)
                       for inner in flow.reaching_assignments(ref.parts[0], assignment.ctx)):
                    return True
        return False
