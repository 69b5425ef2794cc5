"""AMP006 at runtime: ``torch.save`` of optimizer state without the GradScaler's state."""

from __future__ import annotations

from typing import Any

from .base import DynamicCheck


class ScalerStateNotCheckpointed(DynamicCheck):
    code = "AMP006"

    def on_save(self, obj: Any) -> None:
        has_opt, has_scaler = scan_checkpoint(obj)
        stepped = any(getattr(s, "_scale", None) is not None for s in self.state.active_scalers())
        if has_opt and stepped and not has_scaler:
            self.report(
                "checkpoint holds optimizer state but not scaler.state_dict(); a resumed "
                "run restarts the loss scale and skips steps"
            )


def scan_checkpoint(obj: Any, depth: int = 0) -> tuple[bool, bool]:
    """(holds an optimizer state_dict, holds a GradScaler state_dict), a few levels deep."""
    if depth > 3:
        return False, False
    if isinstance(obj, dict):
        keys = set(obj.keys())
        if {"state", "param_groups"} <= keys:
            return True, False
        if {"scale", "growth_factor", "backoff_factor"} <= keys:
            return False, True
        children = obj.values()
    elif isinstance(obj, (list, tuple)):
        children = obj
    else:
        return False, False
    has_opt = has_scaler = False
    for v in children:
        o, s = scan_checkpoint(v, depth + 1)
        has_opt, has_scaler = has_opt or o, has_scaler or s
    return has_opt, has_scaler
