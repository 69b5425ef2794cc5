"""What precision a run uses: device remapping for CPU machines and the FP32 reference switches.

The user's script is never edited; constructors are patched instead, so the same file runs as
written (CUDA), remapped to CPU float16 (a machine without CUDA, where a CUDA GradScaler would
otherwise disable itself and hide every scaler misuse), or with every reduced-precision switch
off (the FP32 reference).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from .patching import Patcher


@dataclass(frozen=True)
class PrecisionPlan:
    remap_cuda_to_cpu: bool  # run "cuda" autocast/GradScaler on the CPU
    hide_cuda: bool  # torch.cuda.is_available() -> False, so device variables pick the CPU
    autocast_dtype: str | None  # "float16"/"bfloat16" forces every autocast region to it
    fp32_reference: bool  # autocast and GradScaler disabled, module half/bf16 casts no-ops


def install(patcher: Patcher, plan: PrecisionPlan) -> None:
    import torch
    from torch.amp.autocast_mode import autocast
    from torch.amp.grad_scaler import GradScaler

    forced = getattr(torch, plan.autocast_dtype) if plan.autocast_dtype else None

    if plan.hide_cuda:
        patcher.set(torch.cuda, "is_available", lambda: False)

    def make_autocast_init(original):
        # the signature is spelled out (not inspect-bound) because autocast is built every step
        def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
            if plan.remap_cuda_to_cpu and isinstance(device_type, str) and device_type.startswith("cuda"):
                device_type = "cpu"
                if dtype is None:
                    dtype = torch.float16  # CUDA's default, kept so the remapped run is fp16
            if forced is not None:
                dtype = forced
            if plan.fp32_reference:
                enabled = False
            return original(self, device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

        return __init__

    if plan.remap_cuda_to_cpu or forced is not None or plan.fp32_reference:
        patcher.wrap(autocast, "__init__", make_autocast_init)

    gs_sig = inspect.signature(GradScaler.__init__)

    def make_scaler_init(original):
        def __init__(self, *args, **kwargs):
            bound = gs_sig.bind(self, *args, **kwargs)
            bound.apply_defaults()
            a = bound.arguments
            device = a["device"]
            if plan.remap_cuda_to_cpu and isinstance(device, str) and device.startswith("cuda"):
                a["device"] = "cpu"
            if plan.fp32_reference:
                a["enabled"] = False
            return original(*bound.args, **bound.kwargs)

        return __init__

    if plan.remap_cuda_to_cpu or plan.fp32_reference:
        patcher.wrap(GradScaler, "__init__", make_scaler_init)

    if plan.fp32_reference:
        _install_fp32_module_casts(patcher, torch)


def _install_fp32_module_casts(patcher: Patcher, torch) -> None:
    reduced = (torch.float16, torch.bfloat16)
    Module = torch.nn.Module

    patcher.set(Module, "half", lambda self: self)
    patcher.set(Module, "bfloat16", lambda self: self)

    def make_to(original):
        def to(self, *args, **kwargs):
            try:
                device, dtype, non_blocking, _ = torch._C._nn._parse_to(*args, **kwargs)
            except Exception:
                return original(self, *args, **kwargs)
            if dtype in reduced:
                if device is None:
                    return self
                return original(self, device, non_blocking=non_blocking)
            return original(self, *args, **kwargs)

        return to

    patcher.wrap(Module, "to", make_to)
