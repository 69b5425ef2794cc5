"""The torch entry points a verify run patches, each turned into events for telemetry and checks.

Hooks keep :class:`AmpState` current, feed :class:`Telemetry` the step boundaries and values,
and tell every :class:`DynamicCheck` what happened. They hold no rule logic of their own.
"""

from __future__ import annotations

from typing import Any

from .checkpoints import CheckpointRedirect
from .checks import DynamicCheck
from .patching import Patcher
from .sites import user_frame
from .state import AmpState
from .telemetry import Telemetry


class Hooks:
    def __init__(
        self,
        state: AmpState,
        telemetry: Telemetry,
        checks: list[DynamicCheck],
        redirect: CheckpointRedirect | None = None,
    ) -> None:
        self.state, self.telemetry, self.checks, self.redirect = state, telemetry, checks, redirect
        self._in_backward = False
        self._inner_step_called = False

    def install(self, patcher: Patcher) -> None:
        import torch
        import torch.nn.utils.clip_grad as clip_mod
        from torch.amp.autocast_mode import autocast
        from torch.amp.grad_scaler import GradScaler
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        patcher.wrap(autocast, "__enter__", self._autocast_enter)
        patcher.wrap(autocast, "__exit__", self._autocast_exit)
        patcher.wrap(GradScaler, "__init__", self._scaler_init)
        patcher.wrap(GradScaler, "scale", self._scaler_scale)
        patcher.wrap(GradScaler, "unscale_", self._scaler_unscale)
        patcher.wrap(GradScaler, "step", self._scaler_step)
        patcher.wrap(GradScaler, "update", self._scaler_update)
        patcher.wrap(torch.Tensor, "backward", self._tensor_backward)
        patcher.wrap(torch.autograd, "backward", self._autograd_backward)
        for name in ("clip_grad_norm_", "clip_grad_value_"):
            for owner in (torch.nn.utils, clip_mod):
                if hasattr(owner, name):
                    patcher.wrap(owner, name, lambda original, n=name: self._clip(original, n))
        # global hooks see every optimizer class, user subclasses included
        patcher.on_undo(register_optimizer_step_pre_hook(self._optimizer_pre).remove)
        patcher.on_undo(register_optimizer_step_post_hook(self._optimizer_post).remove)
        patcher.on_undo(self.telemetry.disarm_batch_probe)
        self.telemetry.arm_batch_probe()
        # torch.save is torch.serialization.save: each name holds its own reference, so both are wrapped
        for owner in (torch, torch.serialization):
            patcher.wrap(owner, "save", self._save)
            patcher.wrap(owner, "load", self._load)
        if torch.distributed.is_available():
            patcher.wrap(torch.distributed, "init_process_group", self._init_process_group)

    def _emit(self, event: str, *args: Any) -> None:
        for check in self.checks:
            getattr(check, event)(*args)

    # -- autocast ------------------------------------------------------------------------------

    def _autocast_enter(self, original):
        def __enter__(ac):
            if self.state.paused:
                self.state.autocast_stack.append(False)
                return original(ac)
            self.telemetry.event()
            enabled = bool(getattr(ac, "_enabled", False))
            if enabled:
                self.state.amp_used = True
                self.state.autocast_dtypes.add(str(getattr(ac, "fast_dtype", "")).replace("torch.", ""))
            self.state.autocast_stack.append(enabled)
            return original(ac)

        return __enter__

    def _autocast_exit(self, original):
        def __exit__(ac, *exc):
            if self.state.autocast_stack:
                self.state.autocast_stack.pop()
            return original(ac, *exc)

        return __exit__

    # -- GradScaler ----------------------------------------------------------------------------

    def _scaler_init(self, original):
        def __init__(scaler, *args, **kwargs):
            original(scaler, *args, **kwargs)
            self.state.scalers_constructed += 1
            self.state.live_scalers.append(scaler)
            self._emit("on_scaler_init", scaler, user_frame())

        return __init__

    def _scaler_scale(self, original):
        import torch

        def scale(scaler, outputs):
            self.telemetry.event()
            out = original(scaler, outputs)
            if isinstance(outputs, torch.Tensor) and outputs.numel() == 1:
                self.telemetry.loss(outputs)
                self.state.scaled_ids.add(id(out))
                self.telemetry.scale_before(scaler)
            if getattr(scaler, "_enabled", False):
                self.state.amp_used = True
            return out

        return scale

    def _scaler_unscale(self, original):
        def unscale_(scaler, optimizer):
            self._emit("on_unscale", scaler, optimizer)
            return original(scaler, optimizer)

        return unscale_

    def _scaler_step(self, original):
        def step(scaler, optimizer, *args, **kwargs):
            self.telemetry.event()
            self._emit("on_scaler_step", scaler, optimizer)
            self.telemetry.claim_primary(optimizer)
            outer = self.state.in_scaler_step
            self.state.in_scaler_step = id(optimizer)
            self._inner_step_called = False
            try:
                result = original(scaler, optimizer, *args, **kwargs)
            finally:
                self.state.in_scaler_step = outer
            if self.telemetry.is_primary(optimizer):
                self._close_step(self._inner_step_called, scaler)
            return result

        return step

    def _scaler_update(self, original):
        def update(scaler, *args, **kwargs):
            result = original(scaler, *args, **kwargs)
            self.state.scaled_pending = False
            self.telemetry.scale_after(scaler)
            self.telemetry.stop_if_done()
            return result

        return update

    # -- backward and clipping -----------------------------------------------------------------

    def _on_backward(self, tensor: Any) -> None:
        import torch

        self.telemetry.event()
        self._emit("on_backward")
        if isinstance(tensor, torch.Tensor):
            if id(tensor) in self.state.scaled_ids:
                if self.state.active_scalers():
                    self.state.scaled_pending = True
            elif tensor.numel() == 1 and tensor.is_floating_point():
                self.telemetry.loss(tensor)

    def _guarded_backward(self, original, first: Any, *args: Any, **kwargs: Any):
        if self._in_backward:  # Tensor.backward calls torch.autograd.backward: one event
            return original(*args, **kwargs)
        self._on_backward(first)
        self._in_backward = True
        try:
            return original(*args, **kwargs)
        finally:
            self._in_backward = False

    def _tensor_backward(self, original):
        def backward(tensor, *args, **kwargs):
            return self._guarded_backward(original, tensor, tensor, *args, **kwargs)

        return backward

    def _autograd_backward(self, original):
        def backward(tensors, *args, **kwargs):
            first = tensors[0] if isinstance(tensors, (list, tuple)) and tensors else tensors
            return self._guarded_backward(original, first, tensors, *args, **kwargs)

        return backward

    def _clip(self, original, name: str):
        def clip(*args, **kwargs):
            self._emit("on_clip", name)
            return original(*args, **kwargs)

        return clip

    # -- optimizer steps -----------------------------------------------------------------------

    def _optimizer_pre(self, optimizer, args, kwargs) -> None:
        inside = self.state.in_scaler_step is not None
        if not inside:
            self.telemetry.event()
            self.telemetry.claim_primary(optimizer)
        self._emit("on_optimizer_step", optimizer, inside)
        if self.telemetry.is_primary(optimizer):
            self.telemetry.grad_norm(optimizer)

    def _optimizer_post(self, optimizer, args, kwargs) -> None:
        if self.state.in_scaler_step is not None:
            if id(optimizer) == self.state.in_scaler_step:
                self._inner_step_called = True
            return
        if self.telemetry.is_primary(optimizer):
            self.state.scaled_pending = False
            self._close_step(True, None)
            self.telemetry.stop_if_done()

    def _close_step(self, applied: bool, scaler: Any | None) -> None:
        self.telemetry.close_step(applied, scaler)
        self.state.scaled_ids.clear()

    # -- checkpoints and process groups --------------------------------------------------------

    def _save(self, original):
        def save(obj, *args, **kwargs):
            self._emit("on_save", obj)
            if self.redirect is not None:
                if args:
                    args = (self.redirect.save_target(args[0]), *args[1:])
                elif "f" in kwargs:
                    kwargs["f"] = self.redirect.save_target(kwargs["f"])
            return original(obj, *args, **kwargs)

        return save

    def _load(self, original):
        def load(*args, **kwargs):
            if self.redirect is not None:
                if args:
                    args = (self.redirect.load_source(args[0]), *args[1:])
                elif "f" in kwargs:
                    kwargs["f"] = self.redirect.load_source(kwargs["f"])
            return original(*args, **kwargs)

        return load

    def _init_process_group(self, original):
        def init_process_group(*args, **kwargs):
            result = original(*args, **kwargs)
            self.state.process_group_seen = True
            return result

        return init_process_group
