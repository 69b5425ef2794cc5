"""Whether anything scales the losses of one training loop: a GradScaler at work in it, a scaler
handed in, or a framework that scales the loss itself."""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from amplint.amp.events import SCALER_KINDS, Event
from amplint.amp.loss_scaling import FRAMEWORK_BACKWARD_RECEIVERS, FRAMEWORK_LOSS_CALLS, FRAMEWORK_MODULES


class LoopScalingFacts:
    """The ``facts.loop_scaling`` service of :class:`~amplint.amp.facts.FileFacts`; asks events, references, calls and loops."""

    def __init__(self, facts: "FileFacts") -> None:
        self.facts = facts

    @cached_property
    def imports_loss_scaling_framework(self) -> bool:
        """The file imports apex, DeepSpeed, accelerate, Lightning ...: they scale losses themselves."""
        return any(target.split(".")[0] in FRAMEWORK_MODULES for record in self.facts.imports for _, _, target in record.aliases)

    def training_unit(self, ctx) -> cst.CSTNode:
        """The outermost training loop around ``ctx`` (an accumulation loop's scaler step may sit
        after the micro-batch loop); the function (or module) when no loop holds it."""
        loop = self.facts.training.outermost_training_loop(ctx)
        return loop.node if loop is not None else ctx.scope.node

    def loss_scaling_in(self, event: Event) -> bool:
        """Something may scale the losses of ``event``'s training loop: a scaler call there
        (``scaler.scale``, ``step``, ``update``, ``unscale_``), a name read there that names a
        scaler (``loss_scaler(loss, optimizer)``, ``self.scaler``), a framework backward there, a
        scaler parameter of the function, or a framework import in the file."""
        if self.imports_loss_scaling_framework:
            return True
        scope, unit = event.ctx.scope, self.training_unit(event.ctx)
        function = self.facts.callgraph.function_of(scope)
        if function is not None and any("scaler" in p.lower() for p in function.params):
            return True
        if any(e.kind in SCALER_KINDS and self.facts.tree.within(e.call, unit) for e in self.facts.timeline.events_by_scope.get(scope, [])):
            return True
        for site in self.facts.callgraph.calls_by_scope.get(scope, []):
            parts = (site.func_text or "").split(".")
            framework = parts[-1] in FRAMEWORK_LOSS_CALLS or parts[-1] == "backward" and any(
                w in p.lower() for p in parts[:-1] for w in FRAMEWORK_BACKWARD_RECEIVERS
            )
            if framework and self.facts.tree.within(site.node, unit):
                return True
        return any(
            ref.ctx.scope is scope and any("scaler" in p.lower() for p in ref.parts) and self.facts.tree.within(ref.node, unit)
            for ref in self.facts.references
        )
