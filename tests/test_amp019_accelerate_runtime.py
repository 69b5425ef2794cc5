"""Runtime truth for AMP019 with the real Accelerate (the ``frameworks`` extra; skipped without it).

On a CPU, ``Accelerator(mixed_precision="fp16")`` builds no GradScaler at all: accelerate 1.16.0
``accelerator.py:536-538`` creates one only when ``self.device.type != "cpu"``, so on CPU the
bad loop is harmless and the fp16 setting silently trains in fp32. The first test shows that.
To see what a GPU run does, the other tests give the Accelerator what ``accelerator.py:548-555``
would build there, ``torch.amp.GradScaler(device_type)`` (``utils/modeling.py:2116``), as a CPU
scaler, before ``prepare`` hands it to the optimizer wrapper (``accelerator.py:2690``). Everything
after that is Accelerate's own code: ``backward`` scales the loss (``accelerator.py:2762-2763``),
the prepared optimizer unscales in ``scaler.step`` (``optimizer.py:169-174``), and
``accelerator.clip_grad_norm_`` calls ``unscale_gradients`` first (``accelerator.py:2950``).

The torch clip then limits the update to ``lr * max_norm / scale``; amplint's fix restores
``lr * max_norm``.
"""

from __future__ import annotations

import pytest

from amplint.api import fix_source, lint_source

torch = pytest.importorskip("torch")
accelerate = pytest.importorskip("accelerate", reason="the frameworks extra (accelerate) is not installed")
from accelerate_support import fresh_state, run_source  # noqa: E402,F401  (fresh_state: autouse)

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

SCALE = 2.0 ** 10
LR, MAX_NORM = 0.1, 1.0

LOOP = """\
import torch
from accelerate import Accelerator


def run(steps=4, lr=0.1, max_norm=1.0, init_scale=1024.0):
    torch.manual_seed(0)
    accelerator = Accelerator(mixed_precision="fp16")
    if accelerator.scaler is None:  # a CPU: give it the scaler a GPU run builds
        accelerator.scaler = torch.amp.GradScaler("cpu", init_scale=init_scale)
        accelerator.native_amp = True
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    model, optimizer = accelerator.prepare(model, optimizer)
    x, y = torch.randn(32, 8) * 3, torch.randn(32, 1)
    moved = []
    for _ in range(steps):
        before = [p.detach().clone() for p in model.parameters()]
        loss = torch.nn.functional.mse_loss(model(x).float(), y)
        accelerator.backward(loss)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
        optimizer.zero_grad()
        moved.append(sum((p.detach() - b).norm() ** 2 for p, b in zip(model.parameters(), before)).sqrt().item())
    return moved, accelerator.scaler.get_scale()
"""


def _run(source: str):
    return run_source(source)


def test_on_cpu_fp16_builds_no_scaler():
    accelerator = accelerate.Accelerator(mixed_precision="fp16", cpu=True)
    assert accelerator.mixed_precision == "fp16"
    assert accelerator.scaler is None and accelerator.native_amp is False


def test_torch_clip_after_accelerator_backward_clips_scaled_gradients():
    assert [f.code for f in lint_source(LOOP, settings={"select": ["AMP019"]})] == ["AMP019"]
    moved, scale = _run(LOOP)
    assert scale == SCALE  # no step was skipped: the gradients were finite, only scaled
    for norm in moved:
        assert norm == pytest.approx(LR * MAX_NORM / SCALE, rel=1e-3)


def test_fixed_loop_clips_the_true_gradient():
    fixed = fix_source(LOOP, settings={"select": ["AMP019"]})
    assert "accelerator.clip_grad_norm_(model.parameters(), max_norm)" in fixed
    assert lint_source(fixed, settings={"select": ["AMP019"]}) == []
    moved, scale = _run(fixed)
    assert scale == SCALE
    for norm in moved:
        assert norm == pytest.approx(LR * MAX_NORM, rel=1e-3)


def test_signatures_the_fix_relies_on():
    """The fix keeps ``parameters, max_norm, norm_type`` / ``parameters, clip_value``: the whole
    signature of Accelerate's methods (accelerator.py:2892, 2953)."""
    import inspect

    norm = list(inspect.signature(accelerate.Accelerator.clip_grad_norm_).parameters)
    value = list(inspect.signature(accelerate.Accelerator.clip_grad_value_).parameters)
    assert norm == ["self", "parameters", "max_norm", "norm_type"]
    assert value == ["self", "parameters", "clip_value"]
    assert list(inspect.signature(torch.nn.utils.clip_grad_norm_).parameters)[:3] == norm[1:]
    assert list(inspect.signature(torch.nn.utils.clip_grad_value_).parameters)[:2] == value[1:]
