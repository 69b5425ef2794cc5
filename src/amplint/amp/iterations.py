"""One training iteration: its events in order, which optimizers a scaler steps, the update after the steps.

An iteration is one pass of the loop that runs a backward, or the body of a per-step function
(``train_step``) that runs the backward and the step itself. The questions here are the ones
the GradScaler's per-iteration state machine (scale, unscale_, step, update) makes rules ask.
"""

from __future__ import annotations

from dataclasses import dataclass

from amplint.amp.events import BACKWARD_KINDS, Event, EventKind
from amplint.semantic.records import Context, Loop, Scope

K = EventKind
# Hooks that only step: the update belongs to whoever calls them.
_STEP_ONLY_HOOKS = ("optimizer_step", "step", "_optimizer_step")


@dataclass
class Iteration:
    """The events of one training iteration, in source order; ``loop`` is ``None`` for a per-step function."""

    loop: Loop | None
    events: list[Event]

    def of(self, kind: EventKind) -> list[Event]:
        return [e for e in self.events if e.kind is kind]


class IterationFacts:
    """The ``facts.iterations`` service of :class:`~amplint.amp.facts.FileFacts`."""

    def __init__(self, facts: "FileFacts") -> None:
        self.facts = facts

    def iteration_of(self, event: Event) -> Iteration | None:
        """The iteration ``event`` belongs to, when the function that holds it clearly owns one:
        its innermost backward loop, or the whole function when a backward runs before ``event``
        there and no backward loop encloses it."""
        scope_events = self.facts.timeline.events_by_scope.get(event.ctx.scope, [])
        loop = self.facts.training.iteration_loop(event.ctx)
        if loop is not None:
            return Iteration(loop, [e for e in scope_events if loop in e.ctx.loops])
        if any(outer in self.facts.training.backward_loops for outer in event.ctx.loops):
            return None
        flow = self.facts.control_flow
        if not any(e.kind in BACKWARD_KINDS and flow.reaches(e.ctx, event.ctx) for e in scope_events):
            return None
        return Iteration(None, list(scope_events))

    def same_iteration(self, a: Event, b: Event) -> bool:
        """``a`` and ``b`` sit in one function under the same iteration loop (or none)."""
        return a.ctx.scope is b.ctx.scope and self.facts.training.iteration_loop(a.ctx) is self.facts.training.iteration_loop(b.ctx)

    def steps_beside(self, event: Event) -> list[Event]:
        """The ``step`` calls of ``event``'s scaler in its function, in the same iteration and on its path."""
        flow = self.facts.control_flow
        return [
            e for e in self.events_of(event.ctx.scope, K.SCALER_STEP, event.scaler)
            if self.same_iteration(e, event) and flow.may_run_together(e.ctx, event.ctx)
        ]

    def backward_between(self, first: Event, then: Event) -> bool:
        """A backward on ``first``'s path runs after it and before ``then``: a new scale/step/update
        cycle starts there (a GAN with one scaler steps D, updates, then scales G's loss)."""
        flow = self.facts.control_flow
        return any(
            e.kind in BACKWARD_KINDS and flow.between(first.ctx, e.ctx, then.ctx)
            for e in self.facts.timeline.events_by_scope.get(first.ctx.scope, [])
        )

    def update_on_every_path_after(self, step: Event) -> bool:
        """Every path through ``step`` runs an ``update()`` of its scaler after it, in the same iteration."""
        return any(
            self.facts.control_flow.on_every_path(step.ctx, e.ctx) and self.same_iteration(e, step)
            for e in self.events_of(step.ctx.scope, K.UPDATE, step.scaler)
        )

    def next_scaler_step_in_function(self, event: Event) -> Event | None:
        """The first ``scaler.step(...)`` a path from ``event`` can reach in its function (same iteration)."""
        flow = self.facts.control_flow
        return next(
            (e for e in self.facts.timeline.events_by_scope.get(event.ctx.scope, [])
             if e.kind is K.SCALER_STEP and e is not event and flow.reaches(event.ctx, e.ctx)),
            None,
        )

    def stepped_optimizers(self, step: Event) -> list[str] | None:
        """The optimizers ``step``'s scaler steps from ``step`` up to its next ``update()`` in the
        same function, in step order; ``None`` when one of them is not a plain expression."""
        out: list[str] = []
        events = self.facts.timeline.events_by_scope.get(step.ctx.scope, [])
        flow = self.facts.control_flow
        updates = [e.ctx for e in events if e.kind is K.UPDATE and e.scaler == step.scaler]
        for event in events:
            if event.scaler != step.scaler or event.kind is not K.SCALER_STEP:
                continue
            if event is not step and not flow.reaches_avoiding(step.ctx, event.ctx, updates):
                continue
            if event.kind is K.SCALER_STEP:
                if event.optimizer is None:
                    return None
                if event.optimizer not in out:
                    out.append(event.optimizer)
        return out

    def optimizers_owning(self, owner: str | None, optimizers: list[str], scope: Scope | None = None) -> list[str]:
        """Those of ``optimizers`` (as named in ``scope``) built over the parameters of ``owner``
        (``model``, ``model.encoder``), matching a sub- or super-module too."""
        if owner is None:
            return []
        matched = []
        for optimizer in optimizers:
            owners = self.facts.optim.optimizer_parameter_owners(optimizer, scope)
            if owners and any(o == owner or o.startswith(owner + ".") or owner.startswith(o + ".") for o in owners):
                matched.append(optimizer)
        return matched

    def may_unscale_between(self, after: Context | None, before: Context) -> bool:
        """A call that may run after ``after`` (from the start of the function for ``None``) and
        before ``before``, that is not itself an event and may unscale: its name says so
        (``self.unscale_grads()``), or it runs a same-file function with an ``unscale_``."""
        flow = self.facts.control_flow
        for site in self.facts.callgraph.calls_by_scope.get(before.scope, []):
            if site.node in self.facts.timeline.event_by_call:
                continue
            # The cheap question first: the path question is asked only of calls that may unscale.
            if "unscale" not in (site.func_text or self.facts.code(site.node.func)).lower() and not any(
                self.events_of(function.scope, K.UNSCALE) for function in self.facts.callgraph.called_functions(site)
            ):
                continue
            if flow.reaches(site.ctx, before) if after is None else flow.between(after, site.ctx, before):
                return True
        return False

    def events_of(self, scope: Scope | None, kind: EventKind, scaler: str | None = None) -> list[Event]:
        """The events of ``kind`` in ``scope`` (the whole file for ``None``; through ``scaler``,
        when given), in order."""
        events = self.facts.timeline.events if scope is None else self.facts.timeline.events_by_scope.get(scope, [])
        return [e for e in events if e.kind is kind and (scaler is None or e.scaler == scaler)]

    def update_may_follow(self, step: Event, iteration: Iteration) -> bool:
        """An ``update()`` of ``step``'s scaler may run after it through code that is not an
        event of ``iteration``: a same-file function that updates, the scaler handed to a helper,
        a same-file caller that updates after calling this function, or a function that is not
        visibly per-step (module-level code, a step-only hook, one nobody here calls)."""
        scaler = step.scaler or ""
        scope = step.ctx.scope
        flow = self.facts.control_flow
        for site in self.facts.callgraph.calls_by_scope.get(scope, []):
            if iteration.loop is not None and iteration.loop not in site.ctx.loops:
                continue
            if not flow.reaches(step.ctx, site.ctx):
                continue
            if self.facts.callgraph.calls_into(site, self.facts.training.updating_functions):
                return True
            if any(self.facts.code(arg.value) == scaler for arg in site.node.args):
                return True
        function = self.facts.callgraph.function_of(scope)
        callers = self.facts.callgraph.callers_of(function) if function is not None else []
        for site in callers:
            # composer's retry loop around ``_train_batch``; a ``train_step`` whose caller updates
            caller = site.ctx.scope
            if any(flow.reaches(site.ctx, e.ctx) for e in self.events_of(caller, K.UPDATE)):
                return True
            if any(
                flow.reaches(site.ctx, s.ctx) and self.facts.callgraph.calls_into(s, self.facts.training.updating_functions)
                for s in self.facts.callgraph.calls_by_scope.get(caller, [])
            ):
                return True
        if iteration.loop is None:
            if function is None:
                return True
            name = function.node.name.value
            if not callers and name not in self.facts.training.PER_STEP_NAMES:
                return True
            if name in _STEP_ONLY_HOOKS:
                return True
        return False

    def optimizer_loop_updating(self, update: Event) -> Loop | None:
        """The loop over optimizers inside one iteration whose passes each run ``update()`` after a
        ``step`` of the same scaler (``for opt in optimizers: scaler.step(opt); scaler.update()``);
        not a loop with its own backward, nor one that also rebinds the scaler (one per pass)."""
        loop = update.ctx.loops[-1] if update.ctx.loops else None
        if loop is None or loop is self.facts.training.iteration_loop(update.ctx) or (update.scaler or "").split(".")[0] in loop.target_names:
            return None
        events = [e for e in self.facts.timeline.events_by_scope.get(update.ctx.scope, []) if loop in e.ctx.loops]
        if any(e.kind in BACKWARD_KINDS for e in events):
            return None
        if self.facts.control_flow.pass_may_skip(loop.node, update.ctx):
            return None  # ``if iopt != optim_idx: continue`` (espnet's GAN turns): maybe one optimizer per pass
        stepped = any(
            e.kind is K.SCALER_STEP and e.scaler == update.scaler and self.facts.control_flow.reaches(e.ctx, update.ctx)
            and self.facts.scaling.optimizer_rebound_per_pass(e)
            for e in events
        )
        return loop if stepped else None
