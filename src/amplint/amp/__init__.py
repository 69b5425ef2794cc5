"""The AMP domain on top of the semantic model: what autocast, GradScaler and optimizers do."""

from amplint.amp.autocast import AutocastCall, AutocastRegion
from amplint.amp.events import BACKWARD_KINDS, SCALER_KINDS, STEP_KINDS, TRAINING_KINDS, Event, EventKind
from amplint.amp.facts import FileFacts
from amplint.amp.scalers import ScalerInfo

__all__ = [
    "AutocastCall", "AutocastRegion", "BACKWARD_KINDS", "Event", "EventKind", "FileFacts", "SCALER_KINDS",
    "STEP_KINDS", "ScalerInfo", "TRAINING_KINDS",
]
