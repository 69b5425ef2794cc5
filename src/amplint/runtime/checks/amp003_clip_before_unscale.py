"""AMP003 at runtime: a clip after a scaled backward, before any ``unscale_`` of this update.

Read from the scaler's own per-optimizer state, so an ``unscale_`` in a helper counts; the
verdict is the protocol's (:mod:`amplint.scaler_protocol`), as for the static rule.
"""

from __future__ import annotations

from amplint.scaler_protocol import Call, Grads, Misuse, Stage, State, after

from .base import DynamicCheck


class ClipBeforeUnscale(DynamicCheck):
    code = "AMP003"

    def on_clip(self, name: str) -> None:
        if not self.state.scaled_pending:
            return
        from torch.amp.grad_scaler import OptState

        for scaler in self.state.active_scalers():
            states = getattr(scaler, "_per_optimizer_states", {})
            unscaled = any(st.get("stage") is OptState.UNSCALED for st in states.values())
            if isinstance(after(State(Stage.UNSCALED if unscaled else Stage.READY, Grads.SCALED), Call.CLIP), Misuse):
                self.report(
                    f"{name} ran on gradients still multiplied by the loss scale; "
                    "call scaler.unscale_(optimizer) before clipping"
                )
                return
