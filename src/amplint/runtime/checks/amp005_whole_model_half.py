"""AMP005 at runtime: an optimizer holds float16/bfloat16 parameters while AMP is in use.

Checked once per optimizer, before the ``unscale_`` that would raise on fp16 gradients.
"""

from __future__ import annotations

from typing import Any

from .base import DynamicCheck


class WholeModelHalf(DynamicCheck):
    code = "AMP005"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._checked: set[int] = set()

    def on_unscale(self, scaler: Any, optimizer: Any) -> None:
        self._check(optimizer)

    def on_scaler_step(self, scaler: Any, optimizer: Any) -> None:
        if getattr(scaler, "_enabled", False):
            self._check(optimizer)

    def on_optimizer_step(self, optimizer: Any, inside_scaler_step: bool) -> None:
        if self.state.amp_used:
            self._check(optimizer)

    def _check(self, optimizer: Any) -> None:
        if id(optimizer) in self._checked:
            return
        self._checked.add(id(optimizer))
        import torch

        reduced = {torch.float16, torch.bfloat16}
        for group in getattr(optimizer, "param_groups", []):
            for p in group.get("params", []):
                if getattr(p, "dtype", None) in reduced:
                    self.report(
                        f"optimizer {type(optimizer).__name__} holds {str(p.dtype).replace('torch.', '')} "
                        "parameters while AMP is active; keep the model in float32 and let autocast cast"
                    )
                    return
