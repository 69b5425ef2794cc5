"""What `amplint verify`'s instrumentation costs per optimizer step.

Times the documented AMP loop (autocast fp16, scaled backward, unscale_, clip, scaler.step,
update) on an MLP whose step takes >= 10 ms on one CPU thread (CPU float16 matmuls are slow), bare
and under the exact patches verify installs,
alternating the two to spread machine noise evenly. Reports the median step time of each in
process CPU time (all threads; robust on a shared, loaded machine, where wall time measures
the neighbours) and in wall time.

    python bench/verify_overhead.py [--device cpu|cuda] [--width 256] [--batch 64]
    python bench/verify_overhead.py --width 8 --batch 8   # a tiny step: the absolute cost
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import nn

from amplint.runtime.instrument import Instrumentation
from amplint.runtime.patching import Patcher
from amplint.runtime.precision import PrecisionPlan, install


def make_loop(device: str, width: int, batch: int):
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width),
        nn.ReLU(), nn.Linear(width, 10),
    ).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    x = torch.randn(batch, width, device=device)
    y = torch.randint(0, 10, (batch,), device=device)
    loss_fn = nn.CrossEntropyLoss()
    state = {}

    def step():
        scaler = state.get("scaler")
        if scaler is None:  # built lazily so it is constructed under the patches being measured
            scaler = state["scaler"] = torch.amp.GradScaler(device)
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()

    return step, state


def timed(step, n: int, device: str) -> list[tuple[float, float]]:
    """(process CPU seconds, wall seconds) per step."""
    out = []
    for _ in range(n):
        c0, t0 = time.process_time(), time.perf_counter()
        step()
        if device == "cuda":
            torch.cuda.synchronize()
        out.append((time.process_time() - c0, time.perf_counter() - t0))
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=30, help="timed steps per trial")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads; 1 keeps OpenMP spin-waits out of the CPU-time figures")
    p.add_argument("--trials", type=int, default=8, help="alternating bare/instrumented trials each")
    a = p.parse_args()
    torch.set_num_threads(a.threads)

    bare: list[tuple[float, float]] = []
    inst: list[tuple[float, float]] = []
    for trial in range(a.trials):
        for mode in ("bare", "instrumented") if trial % 2 == 0 else ("instrumented", "bare"):
            patcher = Patcher()
            if mode == "instrumented":
                install(patcher, PrecisionPlan(False, False, None, False))
                Instrumentation(max_steps=None).install(patcher)
            try:
                step, _ = make_loop(a.device, a.width, a.batch)
                timed(step, 5, a.device)  # warm-up, and the scaler's first backoffs
                (bare if mode == "bare" else inst).extend(timed(step, a.steps, a.device))
            finally:
                patcher.undo()

    clock = 1 if a.device == "cuda" else 0  # CUDA work is not process CPU time: use wall there
    cb, ci = (statistics.median(x[0] for x in v) for v in (bare, inst))
    wb, wi = (statistics.median(x[1] for x in v) for v in (bare, inst))
    print(f"torch {torch.__version__}, device {a.device}, threads {torch.get_num_threads()}, "
          f"MLP width {a.width}, batch {a.batch}, {a.trials} x {a.steps} steps per mode")
    print("| mode | median step, CPU time (ms) | median step, wall (ms) |")
    print("|---|---|---|")
    print(f"| bare | {cb * 1e3:.2f} | {wb * 1e3:.2f} |")
    print(f"| under verify's instrumentation | {ci * 1e3:.2f} | {wi * 1e3:.2f} |")
    mb, mi = (cb, ci) if clock == 0 else (wb, wi)
    print(f"overhead ({'CPU time' if clock == 0 else 'wall'}, median): {(mi / mb - 1) * 100:+.1f}% "
          f"({(mi - mb) * 1e6:+.0f} us per step); wall: {(wi / wb - 1) * 100:+.1f}%")


if __name__ == "__main__":
    main()
