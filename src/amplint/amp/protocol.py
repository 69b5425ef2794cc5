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
from typing import NamedTuple

import libcst as cst

import amplint.scaler_protocol as P
import amplint.semantic.syntax as S
from amplint.amp.events import BACKWARD_KINDS, Event, EventKind
from amplint.semantic.paths import Propagation
from amplint.semantic.records import Scope

K = EventKind
_SCALER_CALLS = {K.UNSCALE: P.Call.UNSCALE, K.SCALER_STEP: P.Call.SCALER_STEP}
# Kinds that make a same-file function's call opaque to the machine: it may run the protocol.
_PROTOCOL_KINDS = (K.SCALE_BACKWARD, K.UNSCALE, K.SCALER_STEP, K.UPDATE)


@dataclass(frozen=True)
class Tracked:
    """One optimizer's state on a path; ``None`` where it is unknown. ``stage_by`` and
    ``grads_by`` are the events that set each part (for messages: "already called on line N")."""

    stage: P.Stage | None = None
    grads: P.Grads | None = None
    stage_by: Event | None = None
    grads_by: Event | None = None


UNKNOWN = Tracked()


@dataclass(frozen=True)
class Found:
    """A misuse ``event`` is on some feasible path, for ``optimizer`` (``None``: the whole scaler)."""

    event: Event
    misuse: P.Misuse
    optimizer: str | None
    before: Tracked


@dataclass(frozen=True)
class _Effect:
    order: int
    call: P.Call | None  # None: the state becomes unknown (``unknown``), or a rebinding
    optimizer: str | None  # None: every optimizer of the scaler
    event: Event | None = None
    unknown: str = ""  # "all", "grads", "fresh" (a new scaler), "mark"/"unmark" (``tensor``), "" (a protocol call)
    new_scale: bool = False  # ``update(new_scale)``: sets the scale, needs no inf checks
    tensor: str | None = None  # a backward on this name is scaled when the path scaled it


class PathState(NamedTuple):
    """What one path carries: each optimizer's state, and the names that hold a scaled loss
    (``loss = scaler.scale(loss)`` under ``if amp:`` scales the later ``loss.backward()`` on
    that path only)."""

    optimizers: tuple[Tracked, ...]
    scaled: frozenset[str] = frozenset()


class ScalerRun:
    """The machine run for one scaler (a group of aliased names) in one function."""

    def __init__(self, facts, scope: Scope, names: frozenset[str], events: list[Event]) -> None:
        self.facts = facts
        self.scope = scope
        self.names = names
        self.optimizers: tuple[str, ...] = tuple(sorted({key for e in events if (key := optimizer_key(facts, e, names))}))
        self._slot = {name: i for i, name in enumerate(self.optimizers)}
        self.effects: dict[int, list[_Effect]] = {}
        self.by_event: dict[Event, _Effect] = {}
        self.tests: set[str] = set()  # the branch tests around an effect: the only ones worth correlating
        self.tensors: set[str] = set()  # names assigned a scaled loss in this function
        self._runs: dict[bool, Propagation | None] = {}

    def add(self, anchor: object, effect: _Effect, ctx=None) -> None:
        self.effects.setdefault(id(anchor), []).append(effect)
        tree = self.facts.tree
        if ctx is None:
            return
        for node in (*(b.node for b in ctx.branches), *(loop.node for loop in ctx.loops)):
            test = getattr(node, "test", None)
            if test is not None:
                self.tests.add(tree.condition_key(test)[0])

    # -- running
    def propagation(self, across_iterations: bool) -> Propagation | None:
        if across_iterations not in self._runs:
            for effects in self.effects.values():
                effects.sort(key=lambda e: e.order)
            paths = self.facts.control_flow.queries(self.scope)
            start = PathState(tuple(UNKNOWN for _ in self.optimizers))
            self._runs[across_iterations] = None if paths is None else paths.propagate(
                start, self._transfer, across_iterations, correlate_only=self.tests.__contains__)
        return self._runs[across_iterations]

    def _transfer(self, node: object, state: PathState) -> PathState:
        for effect in self.effects.get(id(node), ()):
            state = self.apply(state, effect)[0]
        return state

    def states_before(self, event: Event, across_iterations: bool) -> list[PathState]:
        """The states arriving at ``event`` on feasible paths (in one iteration by default)."""
        run = self.propagation(across_iterations)
        anchor = self.facts.control_flow.anchor(event.ctx)
        if run is None or anchor is None:
            return []
        out = []
        for state in run.arriving.get(id(anchor), ()):
            for effect in self.effects.get(id(anchor), ()):
                if effect.order >= event.order:
                    break
                state = self.apply(state, effect)[0]
            out.append(state)
        return out

    # -- one effect
    def apply(self, path: PathState, effect: _Effect) -> tuple[PathState, list[tuple[str | None, P.Misuse, Tracked]]]:
        """The state after ``effect``, and the misuses it is in ``path``."""
        state, scaled = path
        if effect.unknown in ("mark", "unmark"):
            return PathState(state, scaled | {effect.tensor} if effect.unknown == "mark" else scaled - {effect.tensor}), []
        slots = range(len(state)) if effect.optimizer is None else [self._slot[effect.optimizer]]
        if effect.unknown:
            new = list(state)
            for i in slots:
                if effect.unknown == "grads":
                    new[i] = Tracked(state[i].stage, None, state[i].stage_by, None)
                elif effect.unknown == "fresh":
                    new[i] = Tracked(P.Stage.READY, state[i].grads, None, state[i].grads_by)
                else:
                    new[i] = UNKNOWN
            return PathState(tuple(new), scaled), []
        if effect.call is P.Call.UPDATE:
            found = []
            if not effect.new_scale and all(t.stage is not None for t in state):
                misuse = P.update_misuse(t.stage for t in state)
                if misuse is not None:  # it raises before it changes anything
                    return path, [(None, misuse, state[0] if state else UNKNOWN)]
            reset = tuple(
                Tracked(P.Stage.READY, P.next_state(P.State(P.Stage.READY, t.grads), P.Call.UPDATE).grads if t.grads else None,
                        effect.event, t.grads_by)
                for t in state
            )
            return PathState(reset, scaled), found
        call = effect.call
        if call is None:  # a backward on a name: scaled on the paths that scaled it
            call = P.Call.SCALED_BACKWARD if effect.tensor in scaled else P.Call.PLAIN_BACKWARD
        new, found = list(state), []
        for i in slots:
            tracked, misuse = _step(state[i], call, effect.event)
            new[i] = tracked
            if misuse is not None:
                found.append((self.optimizers[i], misuse, state[i]))
        return PathState(tuple(new), scaled), found


def _step(tracked: Tracked, call: P.Call, event: Event | None) -> tuple[Tracked, P.Misuse | None]:
    """One optimizer through ``call``. A misuse only where every value an unknown part may take
    makes it one; the parts of the next state are kept where every such value agrees."""
    stage, grads = tracked.stage, tracked.grads
    stage_by = tracked.stage_by
    if call in (P.Call.SCALED_BACKWARD, P.Call.PLAIN_BACKWARD):
        # A backward starts a cycle: what came before it is taken to be a finished one.
        if stage is None:
            stage, stage_by = P.Stage.READY, event
        if grads is None:
            grads = P.Grads.NONE
    pairs = [
        P.State(s, g)
        for s in ([stage] if stage is not None else list(P.Stage))
        for g in ([grads] if grads is not None else list(P.Grads))
    ]
    outcomes = [P.after(pair, call) for pair in pairs]
    misuse = outcomes[0] if all(o == outcomes[0] for o in outcomes) and isinstance(outcomes[0], P.Misuse) else None
    states = [P.next_state(pair, call) for pair in pairs]
    new_stage = states[0].stage if all(s.stage is states[0].stage for s in states) else None
    new_grads = states[0].grads if all(s.grads is states[0].grads for s in states) else None
    return Tracked(
        new_stage, new_grads,
        stage_by if new_stage is stage else event,
        tracked.grads_by if new_grads is grads else event,
    ), misuse


def optimizer_key(facts, event: Event, scaler_names: frozenset[str]) -> str | None:
    """The optimizer an event acts on, as written: ``scaler.step(opt)``'s argument (any
    expression), ``opt.step()``'s and ``opt.zero_grad()``'s receiver."""
    if event.kind in _SCALER_CALLS and event.scaler in scaler_names:
        if event.optimizer is not None:
            return event.optimizer
        args = S.positional_args(event.call)
        return facts.code(args[0].value) if args else None
    if event.kind in (K.OPTIMIZER_STEP, K.ZERO_GRAD):
        return event.optimizer
    return None


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

    def is_tracked(self, scope: Scope, scaler: str | None) -> bool:
        return any(scaler in run.names for run in self._runs_by_scope.get(scope, []))

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
            run.add(anchor(assignment.ctx), _Effect(scale.order, None, None, scale, unknown="mark", tensor=assignment.targets[0]))
        for event in events:
            effect = self._effect(run, event)
            if effect is not None:
                run.add(anchor(event.ctx), effect, event.ctx)
                run.by_event[event] = effect
        for site in facts.callgraph.calls_by_scope.get(scope, []):
            unknown = self._opaque(site, names)
            if unknown and site.node not in facts.timeline.event_by_call:
                run.add(anchor(site.ctx), _Effect(site.ctx.order, None, None, unknown=unknown), site.ctx)
        for node, assigned in facts.control_flow.assigned_in(scope):
            for name in assigned:
                if name in run.tensors:
                    run.add(node, _Effect(-1, None, None, unknown="unmark", tensor=name))
                if name in names:
                    run.add(node, _Effect(-1, None, None, unknown=self._rebinding(scope, node, name)))
                for optimizer in run.optimizers:
                    if optimizer == name or optimizer.startswith(name + ".") or optimizer.startswith(name + "["):
                        run.add(node, _Effect(-1, None, optimizer, unknown="all"))
        return run

    def _effect(self, run: ScalerRun, event: Event) -> _Effect | None:
        kind, order = event.kind, event.order
        names = run.names
        if kind is K.SCALE_BACKWARD or kind in BACKWARD_KINDS:
            scaler = self.facts.scaling.backward_scaler(event)
            if kind is K.BACKWARD and event.receiver in run.tensors:
                return _Effect(order, None, None, event, tensor=event.receiver)
            if scaler is None:
                return _Effect(order, P.Call.PLAIN_BACKWARD, None, event)
            if scaler in names:
                return _Effect(order, P.Call.SCALED_BACKWARD, None, event)
            return _Effect(order, None, None, event, unknown="grads")  # another scaler's scale
        if kind in _SCALER_CALLS and event.scaler in names:
            key = optimizer_key(self.facts, event, names)
            return _Effect(order, _SCALER_CALLS[kind], key, event) if key is not None else _Effect(order, None, None, event, unknown="all")
        if kind is K.UPDATE and event.scaler in names:
            return _Effect(order, P.Call.UPDATE, None, event, new_scale=bool(event.call.args))
        if kind is K.OPTIMIZER_STEP and event.optimizer in run.optimizers:
            return _Effect(order, P.Call.OPTIMIZER_STEP, event.optimizer, event)
        if kind is K.ZERO_GRAD:
            return _Effect(order, P.Call.ZERO_GRAD, event.optimizer if event.optimizer in run.optimizers else None, event)
        if kind is K.CLIP:
            return _Effect(order, P.Call.CLIP, None, event)
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
