"""AMP007 at runtime: ``optimizer.step()`` on scaled gradients, outside ``scaler.step``."""

from __future__ import annotations

from typing import Any

from amplint.scaler_protocol import Call, Grads, Misuse, Stage, State, after

from .base import DynamicCheck


class OptimizerStepBypassesScaler(DynamicCheck):
    code = "AMP007"

    def on_optimizer_step(self, optimizer: Any, inside_scaler_step: bool) -> None:
        if inside_scaler_step:
            return
        grads = Grads.SCALED if self.state.scaled_pending else Grads.TRUE
        if not isinstance(after(State(Stage.READY, grads), Call.OPTIMIZER_STEP), Misuse):
            return
        # optimizers that unscale themselves (fused AdamW and kin) are meant to step directly
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            return
        self.report(
            "optimizer.step() ran on scaled gradients outside scaler.step(); "
            "use scaler.step(optimizer) so the scale is removed and overflow steps skipped"
        )
