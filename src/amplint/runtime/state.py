"""What the hooks know about the AMP machinery at this moment of the run.

The hooks keep it current; telemetry and the dynamic checks only read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class AmpState:
    autocast_stack: list[bool] = field(default_factory=list)  # enabled flag per open region
    live_scalers: list[Any] = field(default_factory=list)
    autocast_dtypes: set[str] = field(default_factory=set)
    scalers_constructed: int = 0
    amp_used: bool = False  # an enabled autocast region or scaler has been seen
    # ids of the tensors scaler.scale() returned during this step: their backward is scaled
    scaled_ids: set[int] = field(default_factory=set)
    scaled_pending: bool = False  # a scaled backward happened since the last update/step
    in_scaler_step: int | None = None  # id of the optimizer scaler.step is stepping
    process_group_seen: bool = False
    paused: bool = False  # verify's own --eval call is running: nothing it does is the script's

    def autocast_enabled(self) -> bool:
        return any(self.autocast_stack)

    def active_scalers(self) -> list[Any]:
        return [s for s in self.live_scalers if getattr(s, "_enabled", False)]
