"""Per-step records of a training run: loss, scale, applied or skipped, grad norm, batch, time.

A "step" is one attempt of the first optimizer that steps (the primary): ``scaler.step(opt)``
(applied or skipped) or a direct ``opt.step()``. Values that live on the device (loss, scale,
grad norm) are kept as tensors and read once the run is over, so recording adds no device sync.
"""

from __future__ import annotations

import math
import time
import weakref
from dataclasses import asdict, dataclass
from typing import Any, Callable

# the batch size is read from the first module input of this many steps, then carried forward:
# a global forward hook per step is a measurable share of a small step
_PROBED_STEPS = 8


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


def _value(x: Any) -> float | None:
    if x is None:
        return None
    if isinstance(x, (int, float)):
        return float(x)
    try:
        return float(x.item())
    except Exception:
        return None


def snap(t: Any) -> Any:
    """Keep a device value without syncing; CPU values are read now (one call, no sync)."""
    if t is None:
        return None
    if t.device.type == "cpu":
        return t.item()
    return t.detach().clone()


class Telemetry:
    def __init__(self, max_steps: int | None, on_step: Callable[[int, dict], None] | None = None,
                 on_last_step: Callable[[int], None] | None = None) -> None:
        self.max_steps = max_steps
        self.on_step = on_step
        self.on_last_step = on_last_step  # called once the budget is spent, before the run is stopped
        self.raw_steps: list[dict] = []
        self.cur: dict = self._fresh()
        self.primary: int | None = None
        self._primary_ref: Any = None
        self._stop_pending = False
        self._last_boundary: float | None = None
        self._batch_hook = None

    @staticmethod
    def _fresh() -> dict:
        return {"losses": [], "scale_before": None, "grad_norm": None, "samples": None}

    # -- called by the hooks -------------------------------------------------------------------

    def event(self) -> None:
        """Every hooked call: stop once the step budget is spent, and start the clock."""
        if self._stop_pending:
            raise StopRun()
        if self._last_boundary is None:
            self._last_boundary = time.perf_counter()

    def claim_primary(self, optimizer: Any) -> None:
        """The first optimizer to step defines the step; once it is gone (a resume built a new
        one), the next optimizer to step takes over."""
        if self.primary is not None and self._primary_ref is not None and self._primary_ref() is not None:
            return
        if self.primary is not None and self._primary_ref is None:
            return  # not weak-referenceable: keep the first
        self.primary = id(optimizer)
        try:
            self._primary_ref = weakref.ref(optimizer)
        except TypeError:
            self._primary_ref = None

    def is_primary(self, optimizer: Any) -> bool:
        return id(optimizer) == self.primary

    def loss(self, tensor: Any) -> None:
        self.cur["losses"].append(snap(tensor))

    def scale_before(self, scaler: Any) -> None:
        if self.cur["scale_before"] is None and getattr(scaler, "_enabled", False):
            self.cur["scale_before"] = snap(scaler._scale)

    def scale_after(self, scaler: Any) -> None:
        last = self.raw_steps[-1] if self.raw_steps else None
        if last is not None and last["scaler"] == id(scaler) and last["scale_after"] is None:
            if getattr(scaler, "_enabled", False) and scaler._scale is not None:
                last["scale_after"] = snap(scaler._scale)

    def grad_norm(self, optimizer: Any) -> None:
        import torch

        self.cur["grad_norm"] = _grad_norm(torch, optimizer)

    def close_step(self, applied: bool, scaler: Any | None) -> None:
        now = time.perf_counter()
        cur = self.cur
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
        self.raw_steps.append(rec)
        self._last_boundary = now
        self.cur = self._fresh()
        if len(self.raw_steps) < _PROBED_STEPS:
            self.arm_batch_probe()
        else:
            self.cur["samples"] = rec["samples"]  # batch size assumed steady after the first steps
        if self.on_step is not None:
            self.on_step(len(self.raw_steps), rec)
        if self.max_steps is not None and len(self.raw_steps) >= self.max_steps:
            if self.on_last_step is not None and not self._stop_pending:
                self.on_last_step(len(self.raw_steps))
            self._stop_pending = True

    def stop_if_done(self) -> None:
        if self._stop_pending:
            raise StopRun()

    def arm_batch_probe(self) -> None:
        import torch

        if self._batch_hook is not None:
            return

        def probe(module, args):
            handle, self._batch_hook = self._batch_hook, None
            if handle is not None:
                handle.remove()
            for a in args:
                if isinstance(a, torch.Tensor) and a.dim() >= 1:
                    self.cur["samples"] = int(a.shape[0])
                    break

        self._batch_hook = torch.nn.modules.module.register_module_forward_pre_hook(probe)

    def disarm_batch_probe(self) -> None:
        if self._batch_hook is not None:
            self._batch_hook.remove()
            self._batch_hook = None

    # -- results -------------------------------------------------------------------------------

    def steps(self) -> list[StepRecord]:
        out = []
        for i, raw in enumerate(self.raw_steps):
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
