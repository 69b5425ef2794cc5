"""Helpers for the runtime (verify) tests: fixture paths, the family table, runners."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TRAINING = ROOT / "fixtures" / "training"
STEPS = 40  # verify steps and the scripts' own --steps: 40 keeps each run ~1 s on 2 cores

# family -> (runtime code, whether the broken script really fails to train)
FAMILIES = {
    "fp16_model": ("AMP005", True),
    "clip": ("AMP003", True),
    "resume": ("AMP006", True),
    "bypass": ("AMP007", True),
    "autocast_backward": ("AMP002", False),
    "scaler_per_step": ("AMP004", True),
}


def run_verify(script, **kwargs):
    """verify() in this process (fast: torch is imported once); the process-per-run path has its
    own tests in test_verify_isolation.py."""
    from amplint.runtime import verify

    kwargs.setdefault("isolate", False)
    kwargs.setdefault("steps", STEPS)
    kwargs.setdefault("device", "cpu")
    args = kwargs.pop("args", ["--steps", str(STEPS)])
    return verify(str(script), args, **kwargs)


def run_cli(*args, cwd=None, timeout=300):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run(
        [sys.executable, "-m", "amplint", *map(str, args)],
        capture_output=True, text=True, cwd=cwd or ROOT, timeout=timeout, env=env,
    )



TINY_LOOP = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = torch.amp.GradScaler("cpu")
x, y = torch.randn(16, 4), torch.randn(16, 1)
for step in range({steps}):
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.float16):
        loss = (model(x) - y).pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""


def tiny_script(tmp_path, before="", after="", steps=1000, name="train.py"):
    """A few-parameter AMP loop with ``before`` and ``after`` spliced around it."""
    path = tmp_path / name
    path.write_text(before + TINY_LOOP.format(steps=steps) + after)
    return path
