"""The GradScaler protocol along the paths of each function: the ``facts.protocol`` service.

:mod:`amplint.scaler_protocol` says what one call does to one optimizer's state. This module
runs that machine over every feasible path of a function's control-flow graph
(:meth:`~amplint.semantic.paths.PathQueries.propagate`), once per scaler of the function and
for every optimizer it names, and answers, for any event: the states the scaler's optimizers may
be in when it runs, and the misuse the event is on some feasible path, with the events that led
there. The rules AMP003, AMP007, AMP008, AMP009, AMP010 and AMP012 ask these questions instead of
comparing positions.

A scaler is its binding in the function: aliases (``s = self.scaler``) are one scaler; a new
construction resets it, any other assignment makes it unknown. An optimizer is the text the
scaler's calls pass; a loop that rebinds it (``for opt in optimizers``) makes it unknown.

What the machine cannot see makes a state unknown rather than guessed: the state at the
function's start, a call that hands the scaler to other code, a same-file function that runs
scaler calls, a name that says it unscales. An unknown part proves no misuse. One assumption is
made: a backward starts a cycle, so an optimizer whose stage was unknown is READY after it,
and gradients that were unknown held nothing before it (a backward after ``unscale_`` or
``step`` and before ``update()``, or onto gradients left from an earlier cycle, is a misuse
no rule reports).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import libcst as cst

import amplint.scaler_protocol as P
import amplint.semantic.syntax as S
from amplint.amp.events import BACKWARD_KINDS, Event, EventKind
from amplint.amp.protocol_run import SCALER_CALLS, Effect, ScalerRun, Tracked, optimizer_key
from amplint.semantic.records import Scope

K = EventKind
# Kinds that make a same-file function's call opaque to the machine: it may run the protocol.
_PROTOCOL_KINDS = (K.SCALE_BACKWARD, K.UNSCALE, K.SCALER_STEP, K.UPDATE)


@dataclass(frozen=True)
class Found:
    """A misuse ``event`` is on some feasible path, for ``optimizer`` (``None``: the whole scaler)."""

    event: Event
    misuse: P.Misuse
    optimizer: str | None
    before: Tracked


class ProtocolFacts:
    """The ``facts.protocol`` service of :class:`~amplint.amp.facts.FileFacts`."""

    def __init__(self, facts) -> None:
        self.facts = facts

    # -- the questions
    def runs_for(self, event: Event) -> list[ScalerRun]:
        """The runs ``event`` takes part in: its scaler's, or every scaler's of its function."""
        runs = self._runs_by_scope.get(event.ctx.scope, [])
        if event.scaler is not None:
            return [run for run in runs if event.scaler in run.names]
        return runs

    def states_before(self, event: Event, across_iterations: bool = False) -> list[tuple[ScalerRun, dict[str, Tracked]]]:
        """Each scaler's optimizer states that may hold when ``event`` runs."""
        return [
            (run, dict(zip(run.optimizers, state.optimizers)))
            for run in self.runs_for(event) for state in run.states_before(event, across_iterations)
        ]

    def misuses_at(self, event: Event, across_iterations: bool = False) -> list[Found]:
        """The misuses ``event`` is on some feasible path (in one iteration by default)."""
        out: list[Found] = []
        for run in self.runs_for(event):
            effect = run.by_event.get(event)
            if effect is None:
                continue
            for state in run.states_before(event, across_iterations):
                for optimizer, misuse, before in run.apply(state, effect)[1]:
                    found = Found(event, misuse, optimizer, before)
                    if found not in out:
                        out.append(found)
        return out

    def steps_left_at_pass_end(self, step: Event, loop_node: object | None) -> bool:
        """Some feasible path through ``step`` ends a pass of ``loop_node`` (its back edges), or the
        function when ``None``, with the step's optimizer still STEPPED by it: no ``update()`` after it."""
        for run in self.runs_for(step):
            effect = run.by_event.get(step)
            if effect is None or effect.optimizer is None:
                continue
            slot = run.optimizers.index(effect.optimizer)
            if loop_node is None:
                propagation = run.propagation(False)
                ends = propagation.at_exit if propagation is not None else ()
            else:
                propagation = run.propagation(True)
                ends = propagation.back.get(id(loop_node), ()) if propagation is not None else ()
            if any(end.optimizers[slot].stage is P.Stage.STEPPED and end.optimizers[slot].stage_by is step for end in ends):
                return True
        return False

    # -- building the runs
    @cached_property
    def _runs_by_scope(self) -> dict[Scope, list[ScalerRun]]:
        facts = self.facts
        out: dict[Scope, list[ScalerRun]] = {}
        clips_by_scope: dict[Scope, list[Event]] = {}
        for clip in facts.timeline.clip_helper_calls:
            clips_by_scope.setdefault(clip.ctx.scope, []).append(clip)
        for scope, events in facts.timeline.events_by_scope.items():
            groups = self._scaler_groups(scope, events)
            if not groups:
                continue
            events = events + clips_by_scope.get(scope, [])
            out[scope] = [self._build(scope, names, events) for names in groups]
        return out

    def _scaler_groups(self, scope: Scope, events: list[Event]) -> list[frozenset[str]]:
        """The scalers this function runs the protocol with, each as the names that alias it."""
        scaling = self.facts.scaling
        names = {e.scaler for e in events if e.kind in _PROTOCOL_KINDS and e.scaler is not None}
        names |= {s for e in events if e.kind in BACKWARD_KINDS and (s := scaling.backward_scaler(e)) is not None}
        if not names:
            return []
        groups = {name: {name} for name in names}
        for assignment in self.facts.assignments_in(scope):
            value = S.dotted(assignment.value) if assignment.value is not None else None
            if value is None or len(assignment.targets) != 1:
                continue
            target = assignment.targets[0]
            if value in groups or target in groups:
                merged = groups.get(value, {value}) | groups.get(target, {target})
                for name in merged:
                    groups[name] = merged
        unique = {id(g): frozenset(g) for g in groups.values()}
        return sorted(unique.values(), key=lambda g: min(g))

    def _build(self, scope: Scope, names: frozenset[str], events: list[Event]) -> ScalerRun:
        facts = self.facts
        run = ScalerRun(facts, scope, names, events)
        anchor = facts.control_flow.anchor
        for assignment, scale in self._scaled_assignments(scope, names, events):
            run.tensors.add(assignment.targets[0])
            run.add(anchor(assignment.ctx), Effect(scale.order, None, None, scale, unknown="mark", tensor=assignment.targets[0]))
        for event in events:
            effect = self._effect(run, event)
            if effect is not None:
                run.add(anchor(event.ctx), effect, event.ctx)
                run.by_event[event] = effect
        for site in facts.callgraph.calls_by_scope.get(scope, []):
            unknown = self._opaque(site, names)
            if unknown and site.node not in facts.timeline.event_by_call:
                run.add(anchor(site.ctx), Effect(site.ctx.order, None, None, unknown=unknown), site.ctx)
        for node, assigned in facts.control_flow.assigned_in(scope):
            for name in assigned:
                if name in run.tensors:
                    run.add(node, Effect(-1, None, None, unknown="unmark", tensor=name))
                if name in names:
                    run.add(node, Effect(-1, None, None, unknown=self._rebinding(scope, node, name)))
                for optimizer in run.optimizers:
                    if optimizer == name or optimizer.startswith(name + ".") or optimizer.startswith(name + "["):
                        run.add(node, Effect(-1, None, optimizer, unknown="all"))
        return run

    def _effect(self, run: ScalerRun, event: Event) -> Effect | None:
        kind, order = event.kind, event.order
        names = run.names
        if kind is K.SCALE_BACKWARD or kind in BACKWARD_KINDS:
            scaler = self.facts.scaling.backward_scaler(event)
            if kind is K.BACKWARD and event.receiver in run.tensors:
                return Effect(order, None, None, event, tensor=event.receiver)
            if scaler is None:
                return Effect(order, P.Call.PLAIN_BACKWARD, None, event)
            if scaler in names:
                return Effect(order, P.Call.SCALED_BACKWARD, None, event)
            return Effect(order, None, None, event, unknown="grads")  # another scaler's scale
        if kind in SCALER_CALLS and event.scaler in names:
            key = optimizer_key(self.facts, event, names)
            return Effect(order, SCALER_CALLS[kind], key, event) if key is not None else Effect(order, None, None, event, unknown="all")
        if kind is K.UPDATE and event.scaler in names:
            return Effect(order, P.Call.UPDATE, None, event, new_scale=bool(event.call.args))
        if kind is K.OPTIMIZER_STEP and event.optimizer in run.optimizers:
            return Effect(order, P.Call.OPTIMIZER_STEP, event.optimizer, event)
        if kind is K.ZERO_GRAD:
            return Effect(order, P.Call.ZERO_GRAD, event.optimizer if event.optimizer in run.optimizers else None, event)
        if kind is K.CLIP:
            return Effect(order, P.Call.CLIP, None, event)
        return None

    def _scaled_assignments(self, scope: Scope, names: frozenset[str], events: list[Event]):
        """``t = scaler.scale(loss)`` (or an expression around the scale) in this function, with
        the scale event: a name that holds a scaled loss from there on."""
        facts = self.facts
        scales = [e for e in events if e.kind is K.SCALE and e.scaler in names]
        for assignment in facts.assignments_in(scope) if scales else ():
            if assignment.value is None or len(assignment.targets) != 1 or "." in assignment.targets[0]:
                continue
            for scale in scales:
                if facts.tree.contains(assignment.value, scale.call):
                    yield assignment, scale
                    break

    def _opaque(self, site, names: frozenset[str]) -> str:
        """How much of the state a call hides: ``"all"`` when it may run the scaler's calls
        (the scaler is handed to it, it runs a same-file function with scaler calls, or its name
        says it unscales), ``"grads"`` when it may backpropagate or clear gradients, else ``""``."""
        facts = self.facts
        text = site.func_text or ""
        if "unscale" in text.lower():
            return "all"
        if any(facts.code(arg.value) in names for arg in site.node.args):
            return "all"
        kinds = {
            e.kind for function in facts.callgraph.called_functions(site)
            for e in facts.timeline.events_by_scope.get(function.scope, [])
        }
        if kinds & set(_PROTOCOL_KINDS):
            return "all"
        if kinds & {*BACKWARD_KINDS, K.ZERO_GRAD, K.OPTIMIZER_STEP}:
            return "grads"
        return ""

    def _rebinding(self, scope: Scope, node: object, name: str) -> str:
        """A new construction makes the scaler fresh; any other assignment makes it unknown."""
        for assignment in self.facts.assignments_in(scope):
            if self.facts.control_flow.anchor(assignment.ctx) is node and name in assignment.targets:
                site = self.facts.call_site(assignment.value) if isinstance(assignment.value, cst.Call) else None
                if site is not None and self.facts.scaling.is_scaler_construction(site):
                    return "fresh"
        return "all"
