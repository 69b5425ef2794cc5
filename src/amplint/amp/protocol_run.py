"""One run of the GradScaler protocol: the state a path carries and what each effect does to it.

:mod:`amplint.amp.protocol` builds the effects of a function (from its events, its opaque calls
and its assignments) and asks the answers; this module holds the machine that carries them along
the paths, with :mod:`amplint.scaler_protocol`'s table for each call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import amplint.scaler_protocol as P
import amplint.semantic.syntax as S
from amplint.amp.events import Event, EventKind
from amplint.semantic.paths import Propagation
from amplint.semantic.records import Scope

K = EventKind
SCALER_CALLS = {K.UNSCALE: P.Call.UNSCALE, K.SCALER_STEP: P.Call.SCALER_STEP}


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
class Effect:
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
        self.effects: dict[int, list[Effect]] = {}
        self.by_event: dict[Event, Effect] = {}
        self.tests: set[str] = set()  # the branch tests around an effect: the only ones worth correlating
        self.tensors: set[str] = set()  # names assigned a scaled loss in this function
        self._runs: dict[bool, Propagation | None] = {}

    def add(self, anchor: object, effect: Effect, ctx=None) -> None:
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
    def apply(self, path: PathState, effect: Effect) -> tuple[PathState, list[tuple[str | None, P.Misuse, Tracked]]]:
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
    if event.kind in SCALER_CALLS and event.scaler in scaler_names:
        if event.optimizer is not None:
            return event.optimizer
        args = S.positional_args(event.call)
        return facts.code(args[0].value) if args else None
    if event.kind in (K.OPTIMIZER_STEP, K.ZERO_GRAD):
        return event.optimizer
    return None
