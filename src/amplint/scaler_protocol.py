"""The GradScaler protocol, written once: what each call does in each stage, and what PyTorch
raises or silently gets wrong when the order is broken.

Read by the rules (their messages quote :data:`ERRORS`) and by ``amplint verify``'s dynamic
checks (:mod:`amplint.runtime.checks`), so the static and the dynamic side describe the same
machine. Plain data: no torch, no libcst, so verify's instrumented process imports nothing more. ``tests/runtime/test_protocol_torch.py`` drives a
real ``GradScaler`` through every transition that raises and compares the messages with these.

The stages are PyTorch's per optimizer (``torch.amp.grad_scaler.OptState``: READY, UNSCALED,
STEPPED, reset to READY by ``update()``), plus what the scaler does not record but every rule
needs: whether the gradients now carry the scale (a scaled backward ran since the last step).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Stage(str, Enum):
    READY = "ready"  # since update(): nothing recorded for this optimizer
    SCALED = "scaled"  # a scaled backward ran: the gradients are multiplied by the scale
    UNSCALED = "unscaled"  # unscale_(optimizer) ran: true gradients, inf checks recorded
    STEPPED = "stepped"  # scaler.step(optimizer) ran: update() is due


class Call(str, Enum):
    SCALED_BACKWARD = "scaler.scale(loss).backward()"
    UNSCALE = "scaler.unscale_(optimizer)"
    CLIP = "clip_grad_norm_(...)"
    SCALER_STEP = "scaler.step(optimizer)"
    OPTIMIZER_STEP = "optimizer.step()"
    UPDATE = "scaler.update()"


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

_CLIPPED_SCALED = Misuse("AMP003", None, "the gradients are clipped while still multiplied by the loss scale")
_STEP_BYPASSED = Misuse("AMP007", None, "the optimizer steps on scaled gradients, and inf/NaN steps are not skipped")

# (stage, call) -> the next stage, or the misuse. A pair that is missing changes nothing.
TRANSITIONS: dict[tuple[Stage, Call], Stage | Misuse] = {
    (Stage.READY, Call.SCALED_BACKWARD): Stage.SCALED,
    (Stage.READY, Call.UNSCALE): Stage.UNSCALED,
    (Stage.READY, Call.SCALER_STEP): Stage.STEPPED,
    (Stage.READY, Call.UPDATE): Misuse("AMP009", UPDATE_WITHOUT_STEP, "update() runs with no step recorded"),
    (Stage.SCALED, Call.SCALED_BACKWARD): Stage.SCALED,  # accumulation: still scaled by the same scale
    (Stage.SCALED, Call.UNSCALE): Stage.UNSCALED,
    (Stage.SCALED, Call.CLIP): _CLIPPED_SCALED,
    (Stage.SCALED, Call.SCALER_STEP): Stage.STEPPED,  # step unscales first
    (Stage.SCALED, Call.OPTIMIZER_STEP): _STEP_BYPASSED,
    (Stage.SCALED, Call.UPDATE): Misuse("AMP009", UPDATE_WITHOUT_STEP, "update() runs before the step"),
    (Stage.UNSCALED, Call.UNSCALE): Misuse("AMP010", UNSCALE_TWICE, "unscale_ runs twice before update()"),
    (Stage.UNSCALED, Call.SCALER_STEP): Stage.STEPPED,
    (Stage.UNSCALED, Call.UPDATE): Stage.READY,  # inf checks were recorded: the scale backs off or grows
    (Stage.STEPPED, Call.UNSCALE): Misuse("AMP010", UNSCALE_AFTER_STEP, "unscale_ runs after the step"),
    (Stage.STEPPED, Call.SCALER_STEP): Misuse("AMP009", STEP_TWICE, "the step runs twice before update()"),
    (Stage.STEPPED, Call.UPDATE): Stage.READY,
}


def after(stage: Stage, call: Call) -> Stage | Misuse:
    """What ``call`` leads to in ``stage``: the next stage, or the misuse it is."""
    return TRANSITIONS.get((stage, call), stage)


def misuse_of(code: str) -> list[tuple[Stage, Call, Misuse]]:
    """Every transition the rule ``code`` reports."""
    return [(stage, call, found) for (stage, call), found in TRANSITIONS.items()
            if isinstance(found, Misuse) and found.code == code]
