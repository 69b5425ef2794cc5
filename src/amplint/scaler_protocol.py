"""The GradScaler protocol, written once: what each call does to an optimizer's state, and what
PyTorch raises or silently gets wrong when the order is broken.

Read by the static side (:mod:`amplint.amp.protocol` runs this machine along every feasible path
of a function, and the rules AMP003/007/008/009/010/012 ask it) and by ``amplint verify``'s
dynamic checks (:mod:`amplint.runtime.checks`), so the two sides cannot disagree. Plain data:
no torch, no libcst, so verify's instrumented process imports nothing more.
``tests/runtime/test_protocol_torch.py`` drives a real ``GradScaler`` through every transition
and compares what happens with this table.

An optimizer's state has two parts:

- its :class:`Stage`, PyTorch's own per-optimizer record (``torch.amp.grad_scaler.OptState``:
  READY, UNSCALED, STEPPED; ``update()`` resets every optimizer of the scaler to READY);
- what its gradients hold (:class:`Grads`), which the scaler does not record but every rule
  needs: still multiplied by the scale, true values, or nothing yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Iterable


class Stage(str, Enum):
    READY = "ready"  # since update() (or a new scaler): nothing recorded for this optimizer
    UNSCALED = "unscaled"  # unscale_(optimizer) ran: inf checks recorded
    STEPPED = "stepped"  # scaler.step(optimizer) ran: update() is due


class Grads(str, Enum):
    # zeroed, or nothing computed since (with every gradient None, ``zero_grad()``'s default, a
    # ``scaler.step`` raises "No inf checks were recorded for this optimizer.": not modelled)
    NONE = "none"
    SCALED = "scaled"  # a scaled backward ran: the gradients are multiplied by the scale
    TRUE = "true"  # true values: unscaled, or from a plain backward
    STALE = "stale"  # multiplied by a scale that update() has since changed (another optimizer stepped)
    MIXED = "mixed"  # scaled and true gradients added together: nothing can be said


class Call(str, Enum):
    SCALED_BACKWARD = "scaler.scale(loss).backward()"
    PLAIN_BACKWARD = "loss.backward()"
    ZERO_GRAD = "optimizer.zero_grad()"
    UNSCALE = "scaler.unscale_(optimizer)"
    CLIP = "clip_grad_norm_(...)"
    SCALER_STEP = "scaler.step(optimizer)"
    OPTIMIZER_STEP = "optimizer.step()"
    UPDATE = "scaler.update()"


@dataclass(frozen=True)
class State:
    stage: Stage
    grads: Grads


@dataclass(frozen=True)
class Misuse:
    code: str  # the rule that reports it
    raises: str | None  # what PyTorch raises, exactly as it words it; None: it goes on, wrongly
    harm: str  # what goes wrong, in a few words


UNSCALE_TWICE = "RuntimeError: unscale_() has already been called on this optimizer since the last update()."
UNSCALE_AFTER_STEP = "RuntimeError: unscale_() is being called after step()."
STEP_TWICE = "RuntimeError: step() has already been called since the last update()."
UPDATE_WITHOUT_STEP = "AssertionError: No inf checks were recorded prior to update."
UNSCALE_FP16 = "ValueError: Attempting to unscale FP16 gradients."

ERRORS = (UNSCALE_TWICE, UNSCALE_AFTER_STEP, STEP_TWICE, UPDATE_WITHOUT_STEP, UNSCALE_FP16)

CLIPPED_SCALED = Misuse("AMP003", None, "the gradients are clipped while still multiplied by the loss scale")
STEP_BYPASSED = Misuse("AMP007", None, "the optimizer steps on scaled gradients, and inf/NaN steps are not skipped")
NEVER_SCALED = Misuse("AMP008", None, "gradients that were never scaled are divided by the scale: the step is that much too small")
UNSCALED_TWICE = Misuse("AMP010", UNSCALE_TWICE, "unscale_ runs twice before update()")
UNSCALED_AFTER_STEP = Misuse("AMP010", UNSCALE_AFTER_STEP, "unscale_ runs after the step")
STEPPED_TWICE = Misuse("AMP009", STEP_TWICE, "the step runs twice before update()")
UPDATED_WITHOUT_STEP = Misuse("AMP009", UPDATE_WITHOUT_STEP, "update() runs with no step or unscale_ recorded")
RESCALED = Misuse("AMP009", None, "the gradients are unscaled by a scale update() changed after they were scaled")

_AFTER_BACKWARD = {
    Call.SCALED_BACKWARD: {Grads.NONE: Grads.SCALED, Grads.SCALED: Grads.SCALED, Grads.TRUE: Grads.MIXED,
                           Grads.STALE: Grads.MIXED, Grads.MIXED: Grads.MIXED},
    Call.PLAIN_BACKWARD: {Grads.NONE: Grads.TRUE, Grads.TRUE: Grads.TRUE, Grads.SCALED: Grads.MIXED,
                          Grads.STALE: Grads.MIXED, Grads.MIXED: Grads.MIXED},
}
# What unscaling (by ``unscale_`` or by ``step`` itself) leaves in the gradients (STALE ones are
# divided by the wrong scale: true in kind, wrong in size, and reported as RESCALED).
_UNSCALED = {Grads.NONE: Grads.NONE, Grads.SCALED: Grads.TRUE, Grads.TRUE: Grads.TRUE, Grads.STALE: Grads.TRUE, Grads.MIXED: Grads.MIXED}
_STILL_SCALED = (Grads.SCALED, Grads.STALE)


def after(state: State, call: Call) -> State | Misuse:
    """What ``call`` does to one optimizer in ``state``: its next state, or the misuse it is.

    ``UPDATE`` is a call on the whole scaler: :func:`update_misuse` says whether it is one;
    here it only resets the optimizer to READY.
    """
    return _misuse(state, call) or next_state(state, call)


def _misuse(state: State, call: Call) -> Misuse | None:
    stage, grads = state.stage, state.grads
    if call is Call.CLIP and stage is Stage.READY and grads in _STILL_SCALED:
        return CLIPPED_SCALED
    if call is Call.OPTIMIZER_STEP and stage is Stage.READY and grads in _STILL_SCALED:
        return STEP_BYPASSED
    if call is Call.UNSCALE and stage is Stage.UNSCALED:
        return UNSCALED_TWICE
    if call in (Call.UNSCALE, Call.SCALER_STEP) and stage is Stage.STEPPED:
        return UNSCALED_AFTER_STEP if call is Call.UNSCALE else STEPPED_TWICE
    if call in (Call.UNSCALE, Call.SCALER_STEP) and stage is Stage.READY and grads is Grads.TRUE:
        return NEVER_SCALED
    if call in (Call.UNSCALE, Call.SCALER_STEP) and stage is Stage.READY and grads is Grads.STALE:
        return RESCALED
    return None


def next_state(state: State, call: Call) -> State:
    """The state ``call`` leaves, misuse or not: a misuse that raises leaves it as it was (PyTorch
    checks before it changes anything); a silent one goes on as the call always does."""
    stage, grads = state.stage, state.grads
    misuse = _misuse(state, call)
    if misuse is not None and misuse.raises is not None:
        return state
    if call in _AFTER_BACKWARD:
        return State(stage, _AFTER_BACKWARD[call][grads])
    if call is Call.ZERO_GRAD:
        return State(stage, Grads.NONE)
    if call is Call.UPDATE:
        return State(Stage.READY, Grads.STALE if grads is Grads.SCALED else grads)
    if call is Call.UNSCALE:
        return State(Stage.UNSCALED, _UNSCALED[grads])
    if call is Call.SCALER_STEP:  # it unscales first unless unscale_ already ran
        return State(Stage.STEPPED, _UNSCALED[grads] if stage is Stage.READY else grads)
    return state  # CLIP, OPTIMIZER_STEP: the scaler records nothing


def update_misuse(stages: Iterable[Stage]) -> Misuse | None:
    """``update()`` given the stages of the scaler's optimizers: it needs the inf checks that an
    ``unscale_`` or ``step`` of at least one of them recorded."""
    return None if any(stage is not Stage.READY for stage in stages) else UPDATED_WITHOUT_STEP


def reachable(state: State) -> bool:
    """Gradients go STALE only in ``update()``, which leaves every optimizer READY."""
    return state.grads is not Grads.STALE or state.stage is Stage.READY


def transitions() -> list[tuple[State, Call, State | Misuse]]:
    """Every (state, call) pair with what it leads to: the table the runtime test drives."""
    return [
        (State(stage, grads), call, after(State(stage, grads), call))
        for stage in Stage for grads in Grads for call in Call
        if call is not Call.UPDATE and reachable(State(stage, grads))
    ]


def misuse_of(code: str) -> list[tuple[State, Call, Misuse]]:
    """Every transition the rule ``code`` reports (``update()`` with no step aside)."""
    return [(state, call, found) for state, call, found in transitions() if isinstance(found, Misuse) and found.code == code]
