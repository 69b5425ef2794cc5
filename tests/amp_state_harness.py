"""Run a fixture's ``main()`` and print, as JSON, every autocast state and GradScaler setting it creates.

Usage: python amp_state_harness.py FILE [--deny-future-warnings]

CUDA availability is patched to True on machines without a GPU: autocast and
GradScaler only consult it to decide whether to disable themselves, and the
CUDA autocast state is a thread-local flag that works without a device, so the
recorded configuration is the one a GPU machine would build.
"""

from __future__ import annotations

import json
import runpy
import sys
import warnings

import torch

DEVICES = ("cuda", "cpu")
events: list = []


def _autocast_state(tag: str) -> dict:
    return {
        "event": tag,
        "enabled": {d: torch.is_autocast_enabled(d) for d in DEVICES},
        "dtype": {d: str(torch.get_autocast_dtype(d)) for d in DEVICES},
        "cache": torch.is_autocast_cache_enabled(),
    }


def _describe(value):
    if isinstance(value, torch.Tensor):
        return {"dtype": str(value.dtype), "shape": list(value.shape), "sum": round(float(value.double().sum()), 4)}
    if isinstance(value, (list, tuple)):
        return [_describe(v) for v in value]
    if isinstance(value, torch.amp.GradScaler):
        return "GradScaler"
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return str(value) if isinstance(value, torch.dtype) else type(value).__name__


def install() -> None:
    torch.cuda.is_available = lambda: True
    torch.cuda.is_bf16_supported = lambda *a, **k: True
    original_enter = torch.amp.autocast.__enter__

    def recording_enter(self):
        result = original_enter(self)
        events.append(_autocast_state(f"enter:{self.device}"))
        return result

    torch.amp.autocast.__enter__ = recording_enter
    original_init = torch.amp.GradScaler.__init__

    def recording_init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        events.append(
            {
                "event": "GradScaler",
                "device": self._device,
                "enabled": self._enabled,
                "init_scale": self._init_scale,
                "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
            }
        )

    torch.amp.GradScaler.__init__ = recording_init


def main() -> None:
    path = sys.argv[1]
    install()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        namespace = runpy.run_path(path, run_name="fixture")
        results = []
        for wrapper in ("plain", "under-cuda-autocast"):
            torch.set_autocast_enabled("cuda", False)
            torch.manual_seed(0)
            if wrapper == "plain":
                value = namespace["main"]()
            else:
                with torch.amp.autocast("cuda", dtype=torch.float16):
                    value = namespace["main"]()
            results.append(_describe(value))
    future = sorted({str(w.message).split("\n")[0] for w in caught if issubclass(w.category, (FutureWarning, DeprecationWarning))})
    print(json.dumps({"events": events, "results": results, "deprecations": future}))


if __name__ == "__main__":
    main()
