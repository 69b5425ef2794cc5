"""AMP002 at runtime: backward or a step while an autocast region is enabled."""

from __future__ import annotations

from typing import Any

from .base import DynamicCheck


class BackwardInAutocast(DynamicCheck):
    code = "AMP002"

    def _check(self, what: str) -> None:
        if self.state.autocast_enabled():
            self.report(f"{what} ran while autocast was enabled; close the autocast block before it")

    def on_backward(self) -> None:
        self._check("backward()")

    def on_scaler_step(self, scaler: Any, optimizer: Any) -> None:
        self._check("scaler.step()")

    def on_optimizer_step(self, optimizer: Any, inside_scaler_step: bool) -> None:
        if not inside_scaler_step:
            self._check("optimizer.step()")
