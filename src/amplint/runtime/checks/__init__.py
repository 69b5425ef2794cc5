"""The dynamic form of the AMP rules: one check per code, each in its own module."""

from __future__ import annotations

from .amp002_backward_in_autocast import BackwardInAutocast
from .amp003_clip_before_unscale import ClipBeforeUnscale
from .amp004_scaler_in_loop import ScalerInLoop
from .amp005_whole_model_half import WholeModelHalf
from .amp006_scaler_state_not_checkpointed import ScalerStateNotCheckpointed
from .amp007_optimizer_step_bypasses_scaler import OptimizerStepBypassesScaler
from .base import DynamicCheck

ALL_CHECKS: tuple[type[DynamicCheck], ...] = (
    BackwardInAutocast,
    ClipBeforeUnscale,
    ScalerInLoop,
    WholeModelHalf,
    ScalerStateNotCheckpointed,
    OptimizerStepBypassesScaler,
)

__all__ = ["ALL_CHECKS", "DynamicCheck"]
