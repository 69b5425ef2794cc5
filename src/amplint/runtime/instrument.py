"""Observation of a training run: per optimizer step, and the dynamic form of the AMP rules.

A "step" is one attempt of the first optimizer that steps (the primary): ``scaler.step(opt)``
(applied or skipped) or a direct ``opt.step()``. Values that live on the device (loss, scale,
grad norm) are kept as tensors and read once the run is over, so recording adds no device sync.
"""

from __future__ import annotations

import math
import os
import sys
import time
import weakref
from dataclasses import asdict, dataclass
from typing import Any, Callable

from .patching import Patcher


class StopRun(BaseException):
    """Raised inside the user's loop once enough steps are recorded.

    A BaseException so that a user's ``except Exception`` around the step cannot swallow it.
    """


@dataclass
class StepRecord:
    index: int
    wall_s: float  # since the previous step boundary (or the first instrumented event)
    loss: float | None
    scale_before: float | None
    scale_after: float | None
    applied: bool
    nonfinite_loss: bool
    nonfinite_grads: bool
    grad_norm: float | None
    samples: int | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Finding:
    code: str
    message: str
    path: str
    line: int
    severity: str = "error"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def format(self) -> str:
        return f"{self.path}:{self.line}: {self.code} {self.message}"


_TORCH_DIR = None
# the batch size is read from the first module input of this many steps, then carried forward:
# a global forward hook per step is a measurable share of a small step
_PROBED_STEPS = 8
_OWN_DIR = os.path.dirname(os.path.abspath(__file__))
# wrappers between the user's call and our hook (deprecation decorators, context managers)
_STDLIB_MARKERS = (
    os.sep + "runpy.py",
    os.sep + "contextlib.py",
    os.sep + "threading.py",
    os.sep + "typing_extensions.py",
    os.sep + "functools.py",
    os.sep + "warnings.py",
)


def _user_frame(_depth: int = 1) -> tuple[str, int]:
    """The innermost frame that belongs to neither torch, amplint's runtime nor runpy.

    Walking from the innermost frame (rather than a fixed depth) keeps this right whatever
    number of torch wrappers sit between the user's call and our hook.
    """
    global _TORCH_DIR
    if _TORCH_DIR is None:
        import torch

        _TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
    frame = sys._getframe(1)
    while frame is not None:
        fn = frame.f_code.co_filename
        if not (
            fn.startswith(_TORCH_DIR)
            or fn.startswith(_OWN_DIR)
            or fn.endswith(_STDLIB_MARKERS)
            or fn.startswith("<")
        ):
            return fn, frame.f_lineno
        frame = frame.f_back
    return "<unknown>", 0


def _value(x: Any) -> float | None:
    if x is None:
        return None
    if isinstance(x, (int, float)):
        return float(x)
    try:
        return float(x.item())
    except Exception:
        return None


class Instrumentation:
    def __init__(
        self,
        max_steps: int | None,
        on_step: Callable[[int, dict], None] | None = None,
    ) -> None:
        self.max_steps = max_steps
        self.on_step = on_step
        self.findings: dict[tuple[str, str, int], Finding] = {}
        self.scalers_constructed = 0
        self.autocast_dtypes: set[str] = set()
        self.saves = 0
        self._raw_steps: list[dict] = []
        self._cur: dict = self._fresh()
        self._autocast_stack: list[bool] = []
        self._primary: int | None = None
        self._primary_ref: Any = None
        self._in_scaler_step: int | None = None  # id of the optimizer scaler.step is stepping
        self._inner_step_called = False
        self._scaled_pending = False  # a scaled backward happened since the last update/step
        self._scaled_ids: set[int] = set()
        self._opt_owner: dict[int, int] = {}
        self._scaler_sites: dict[int, tuple[str, int]] = {}
        self._live_scalers: list[Any] = []
        self._dtype_checked: set[int] = set()
        self._in_backward = False
        self._stop_pending = False
        self._last_boundary: float | None = None
        self._batch_hook = None
        self._amp_used = False

    # -- bookkeeping ---------------------------------------------------------------------------

    @staticmethod
    def _fresh() -> dict:
        return {"losses": [], "scale_before": None, "grad_norm": None, "samples": None}

    def finding(self, code: str, message: str, site: tuple[str, int] | None = None) -> None:
        path, line = site or _user_frame(3)
        key = (code, path, line)
        if key not in self.findings:
            self.findings[key] = Finding(code, message, path, line)

    def _claim_primary(self, optimizer: Any) -> None:
        """The first optimizer to step defines the step; once it is gone (a resume built a new
        one), the next optimizer to step takes over."""
        if self._primary is not None and self._primary_ref is not None and self._primary_ref() is not None:
            return
        if self._primary is not None and self._primary_ref is None:
            return  # not weak-referenceable: keep the first
        self._primary = id(optimizer)
        try:
            self._primary_ref = weakref.ref(optimizer)
        except TypeError:
            self._primary_ref = None

    def _maybe_stop(self) -> None:
        if self._stop_pending:
            raise StopRun()

    def _mark(self) -> None:
        if self._last_boundary is None:
            self._last_boundary = time.perf_counter()

    def _close_step(self, applied: bool, scaler: Any | None) -> None:
        now = time.perf_counter()
        cur = self._cur
        rec = {
            "wall_s": now - (self._last_boundary or now),
            "losses": cur["losses"],
            "scale_before": cur["scale_before"],
            "scale_after": None,
            "applied": applied,
            "grad_norm": cur["grad_norm"] if applied else None,
            "samples": cur["samples"],
            "scaler": id(scaler) if scaler is not None else None,
        }
        self._raw_steps.append(rec)
        self._last_boundary = now
        self._cur = self._fresh()
        self._scaled_ids.clear()
        if len(self._raw_steps) < _PROBED_STEPS:
            self._arm_batch_probe()
        else:
            self._cur["samples"] = rec["samples"]  # batch size assumed steady after the first steps
        if self.on_step is not None:
            self.on_step(len(self._raw_steps), rec)
        if self.max_steps is not None and len(self._raw_steps) >= self.max_steps:
            self._stop_pending = True

    def _snap(self, t: Any) -> Any:
        """Keep a device value without syncing; CPU values are read now (one call, no sync)."""
        if t is None:
            return None
        if t.device.type == "cpu":
            return t.item()
        return t.detach().clone()

    def _arm_batch_probe(self) -> None:
        import torch

        if self._batch_hook is not None:
            return

        def probe(module, args):
            handle, self._batch_hook = self._batch_hook, None
            if handle is not None:
                handle.remove()
            for a in args:
                if isinstance(a, torch.Tensor) and a.dim() >= 1:
                    self._cur["samples"] = int(a.shape[0])
                    break

        self._batch_hook = torch.nn.modules.module.register_module_forward_pre_hook(probe)

    # -- results -------------------------------------------------------------------------------

    def steps(self) -> list[StepRecord]:
        out = []
        for i, raw in enumerate(self._raw_steps):
            losses = [_value(v) for v in raw["losses"]]
            losses = [v for v in losses if v is not None]
            loss = sum(losses) / len(losses) if losses else None
            norm = _value(raw["grad_norm"])
            samples = raw["samples"]
            if samples is not None and len(raw["losses"]) > 1:
                samples *= len(raw["losses"])  # one probe per step, one loss per micro-batch
            out.append(
                StepRecord(
                    index=i,
                    wall_s=raw["wall_s"],
                    loss=loss,
                    scale_before=_value(raw["scale_before"]),
                    scale_after=_value(raw["scale_after"]),
                    applied=raw["applied"],
                    nonfinite_loss=loss is not None and not math.isfinite(loss),
                    nonfinite_grads=(not raw["applied"]) or (norm is not None and not math.isfinite(norm)),
                    grad_norm=norm,
                    samples=samples,
                )
            )
        return out

    def finding_list(self) -> list[Finding]:
        return sorted(self.findings.values(), key=lambda f: (f.path, f.line, f.code))

    # -- checks shared by several hooks --------------------------------------------------------

    def _check_autocast_open(self, what: str) -> None:
        if any(self._autocast_stack):
            self.finding(
                "AMP002",
                f"{what} ran while autocast was enabled; close the autocast block before it",
                _user_frame(3),
            )

    def _check_reduced_params(self, optimizer: Any) -> None:
        key = id(optimizer)
        if key in self._dtype_checked:
            return
        self._dtype_checked.add(key)
        import torch

        reduced = {torch.float16, torch.bfloat16}
        for group in getattr(optimizer, "param_groups", []):
            for p in group.get("params", []):
                if getattr(p, "dtype", None) in reduced:
                    self.finding(
                        "AMP005",
                        f"optimizer {type(optimizer).__name__} holds {str(p.dtype).replace('torch.', '')} "
                        "parameters while AMP is active; keep the model in float32 and let autocast cast",
                        _user_frame(4),
                    )
                    return

    def _active_scalers(self) -> list[Any]:
        return [s for s in self._live_scalers if getattr(s, "_enabled", False)]

    # -- installation --------------------------------------------------------------------------

    def install(self, patcher: Patcher) -> None:
        import torch
        from torch.amp.autocast_mode import autocast
        from torch.amp.grad_scaler import GradScaler, OptState

        inst = self

        # autocast: which regions are open, and with which dtype
        def make_enter(original):
            def __enter__(self_):
                inst._maybe_stop()
                inst._mark()
                enabled = bool(getattr(self_, "_enabled", False))
                if enabled:
                    inst._amp_used = True
                    inst.autocast_dtypes.add(str(getattr(self_, "fast_dtype", "")).replace("torch.", ""))
                inst._autocast_stack.append(enabled)
                return original(self_)

            return __enter__

        def make_exit(original):
            def __exit__(self_, *exc):
                if inst._autocast_stack:
                    inst._autocast_stack.pop()
                return original(self_, *exc)

            return __exit__

        patcher.wrap(autocast, "__enter__", make_enter)
        patcher.wrap(autocast, "__exit__", make_exit)

        # GradScaler
        def make_init(original):
            def __init__(self_, *args, **kwargs):
                original(self_, *args, **kwargs)
                inst.scalers_constructed += 1
                inst._live_scalers.append(self_)
                inst._scaler_sites[id(self_)] = _user_frame(2)

            return __init__

        def make_scale(original):
            def scale(self_, outputs):
                inst._maybe_stop()
                inst._mark()
                out = original(self_, outputs)
                if isinstance(outputs, torch.Tensor) and outputs.numel() == 1:
                    inst._cur["losses"].append(inst._snap(outputs))
                    inst._scaled_ids.add(id(out))
                    if inst._cur["scale_before"] is None and getattr(self_, "_enabled", False):
                        inst._cur["scale_before"] = inst._snap(self_._scale)
                if getattr(self_, "_enabled", False):
                    inst._amp_used = True
                return out

            return scale

        def make_unscale(original):
            def unscale_(self_, optimizer):
                inst._check_reduced_params(optimizer)
                return original(self_, optimizer)

            return unscale_

        def make_step(original):
            def step(self_, optimizer, *args, **kwargs):
                inst._maybe_stop()
                inst._mark()
                inst._check_autocast_open("scaler.step()")
                if getattr(self_, "_enabled", False):
                    inst._check_reduced_params(optimizer)
                    owner = inst._opt_owner.setdefault(id(optimizer), id(self_))
                    if owner != id(self_):
                        inst.finding(
                            "AMP004",
                            "a second GradScaler steps the same optimizer; build the scaler once, "
                            "before the loop, so its scale carries over between steps",
                            inst._scaler_sites.get(id(self_)),
                        )
                        inst._opt_owner[id(optimizer)] = id(self_)
                inst._claim_primary(optimizer)
                outer = inst._in_scaler_step
                inst._in_scaler_step = id(optimizer)
                inst._inner_step_called = False
                try:
                    result = original(self_, optimizer, *args, **kwargs)
                finally:
                    inst._in_scaler_step = outer
                if id(optimizer) == inst._primary:
                    inst._close_step(inst._inner_step_called, self_)
                return result

            return step

        def make_update(original):
            def update(self_, *args, **kwargs):
                result = original(self_, *args, **kwargs)
                inst._scaled_pending = False
                last = inst._raw_steps[-1] if inst._raw_steps else None
                if last is not None and last["scaler"] == id(self_) and last["scale_after"] is None:
                    if getattr(self_, "_enabled", False) and self_._scale is not None:
                        last["scale_after"] = inst._snap(self_._scale)
                inst._maybe_stop()
                return result

            return update

        patcher.wrap(GradScaler, "__init__", make_init)
        patcher.wrap(GradScaler, "scale", make_scale)
        patcher.wrap(GradScaler, "unscale_", make_unscale)
        patcher.wrap(GradScaler, "step", make_step)
        patcher.wrap(GradScaler, "update", make_update)

        # backward: the loss when no scaler is used, AMP002, and which grads are scaled
        def on_backward(tensor: Any) -> None:
            inst._maybe_stop()
            inst._mark()
            inst._check_autocast_open("backward()")
            if isinstance(tensor, torch.Tensor):
                if id(tensor) in inst._scaled_ids:
                    if inst._active_scalers():
                        inst._scaled_pending = True
                elif tensor.numel() == 1 and tensor.is_floating_point():
                    inst._cur["losses"].append(inst._snap(tensor))

        def make_tensor_backward(original):
            def backward(self_, *args, **kwargs):
                if inst._in_backward:
                    return original(self_, *args, **kwargs)
                on_backward(self_)
                inst._in_backward = True
                try:
                    return original(self_, *args, **kwargs)
                finally:
                    inst._in_backward = False

            return backward

        def make_autograd_backward(original):
            def backward(tensors, *args, **kwargs):
                if inst._in_backward:
                    return original(tensors, *args, **kwargs)
                first = tensors[0] if isinstance(tensors, (list, tuple)) and tensors else tensors
                on_backward(first)
                inst._in_backward = True
                try:
                    return original(tensors, *args, **kwargs)
                finally:
                    inst._in_backward = False

            return backward

        patcher.wrap(torch.Tensor, "backward", make_tensor_backward)
        patcher.wrap(torch.autograd, "backward", make_autograd_backward)

        # clipping: AMP003 from the scaler's per-optimizer state
        def make_clip(original, name):
            def clip(*args, **kwargs):
                if inst._scaled_pending:
                    for s in inst._active_scalers():
                        states = getattr(s, "_per_optimizer_states", {})
                        if not any(st.get("stage") is OptState.UNSCALED for st in states.values()):
                            inst.finding(
                                "AMP003",
                                f"{name} ran on gradients still multiplied by the loss scale; "
                                "call scaler.unscale_(optimizer) before clipping",
                                _user_frame(2),
                            )
                            break
                return original(*args, **kwargs)

            return clip

        import torch.nn.utils.clip_grad as clip_mod

        for name in ("clip_grad_norm_", "clip_grad_value_"):
            for owner in (torch.nn.utils, clip_mod):
                if hasattr(owner, name):
                    patcher.wrap(owner, name, lambda orig, n=name: make_clip(orig, n))

        # optimizer steps (global hooks: every optimizer class, including user subclasses)
        def pre_hook(optimizer, args, kwargs):
            inside = inst._in_scaler_step is not None
            if not inside:
                inst._maybe_stop()
                inst._mark()
                inst._check_autocast_open("optimizer.step()")
                inst._claim_primary(optimizer)
                if inst._scaled_pending and not getattr(optimizer, "_step_supports_amp_scaling", False):
                    inst.finding(
                        "AMP007",
                        "optimizer.step() ran on scaled gradients outside scaler.step(); "
                        "use scaler.step(optimizer) so the scale is removed and overflow steps skipped",
                        _user_frame(3),
                    )
            if inst._amp_used:
                inst._check_reduced_params(optimizer)
            if id(optimizer) == inst._primary:
                inst._cur["grad_norm"] = _grad_norm(torch, optimizer)

        def post_hook(optimizer, args, kwargs):
            if inst._in_scaler_step is not None:
                if id(optimizer) == inst._in_scaler_step:
                    inst._inner_step_called = True
                return
            if id(optimizer) == inst._primary:
                inst._scaled_pending = False
                inst._close_step(True, None)
                inst._maybe_stop()

        from torch.optim.optimizer import (
            register_optimizer_step_post_hook,
            register_optimizer_step_pre_hook,
        )

        h1 = register_optimizer_step_pre_hook(pre_hook)
        h2 = register_optimizer_step_post_hook(post_hook)
        patcher.on_undo(h1.remove)
        patcher.on_undo(h2.remove)

        def remove_probe():
            if inst._batch_hook is not None:
                inst._batch_hook.remove()
                inst._batch_hook = None

        patcher.on_undo(remove_probe)
        self._arm_batch_probe()

        # checkpoints: AMP006
        def make_save(original):
            def save(obj, *args, **kwargs):
                inst.saves += 1
                has_opt, has_scaler = _scan_checkpoint(obj)
                stepped = any(getattr(s, "_scale", None) is not None for s in inst._active_scalers())
                if has_opt and stepped and not has_scaler:
                    inst.finding(
                        "AMP006",
                        "checkpoint holds optimizer state but not scaler.state_dict(); a resumed "
                        "run restarts the loss scale and skips steps",
                        _user_frame(2),
                    )
                return original(obj, *args, **kwargs)

            return save

        patcher.wrap(torch, "save", make_save)


def _grad_norm(torch, optimizer) -> Any:
    grads = [p.grad for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
    if not grads:
        return None
    try:
        with torch.no_grad():
            norms = torch._foreach_norm(grads)
            try:
                stacked = torch.stack(norms)
            except RuntimeError:  # grads on several devices or of several dtypes
                stacked = torch.stack([n.float().to(norms[0].device) for n in norms])
            norm = torch.linalg.vector_norm(stacked)
            return norm.item() if norm.device.type == "cpu" else norm
    except Exception:  # sparse or exotic grads: the norm is a nicety, never a reason to fail
        return None


def _scan_checkpoint(obj: Any, depth: int = 0) -> tuple[bool, bool]:
    """(holds an optimizer state_dict, holds a GradScaler state_dict), a few levels deep."""
    if depth > 3:
        return False, False
    if isinstance(obj, dict):
        keys = set(obj.keys())
        if {"state", "param_groups"} <= keys:
            return True, False
        if {"scale", "growth_factor", "backoff_factor"} <= keys:
            return False, True
        has_opt = has_scaler = False
        for v in obj.values():
            o, s = _scan_checkpoint(v, depth + 1)
            has_opt, has_scaler = has_opt or o, has_scaler or s
        return has_opt, has_scaler
    if isinstance(obj, (list, tuple)):
        has_opt = has_scaler = False
        for v in obj:
            o, s = _scan_checkpoint(v, depth + 1)
            has_opt, has_scaler = has_opt or o, has_scaler or s
        return has_opt, has_scaler
    return False, False
