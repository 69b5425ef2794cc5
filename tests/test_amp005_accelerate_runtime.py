"""Runtime truth for AMP005 on Accelerate (the ``frameworks`` extra): the trained model cast to
float16 while an ``Accelerator(mixed_precision="fp16")`` scales.

The Accelerator gets the scaler a GPU fp16 run builds (``torch.amp.GradScaler``, accelerate
1.16.0 ``accelerator.py:548-555``), as a CPU scaler, before ``prepare``, as in the AMP022 runtime
test; everything after is Accelerate's and torch's code. The prepared optimizer's ``step()`` runs
``scaler.step(optimizer)`` (``optimizer.py:169-173``), which unscales first: with float16
parameters the gradients are float16 and torch raises ``ValueError: Attempting to unscale FP16
gradients.``. amplint's (unsafe) fix drops the cast: the loop then trains, its float32 weights
moving at every step.
"""

from __future__ import annotations

import pytest

from amplint.api import fix_source, lint_source

torch = pytest.importorskip("torch")
accelerate = pytest.importorskip("accelerate", reason="the frameworks extra (accelerate) is not installed")
from accelerate_support import fresh_state, run_source  # noqa: E402,F401  (fresh_state: autouse)

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

SELECT = {"select": ["AMP005"]}

LOOP = """\
import torch
from accelerate import Accelerator


def run(steps=3):
    torch.manual_seed(0)
    accelerator = Accelerator(mixed_precision="fp16")
    if accelerator.scaler is None:  # a CPU: give it the scaler a GPU run builds
        accelerator.scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
        accelerator.native_amp = True
    weight_dtype = torch.float16
    model = torch.nn.Linear(8, 1)
    model.to(accelerator.device, dtype=weight_dtype)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer = accelerator.prepare(model, optimizer)
    x, y = torch.randn(32, 8), torch.randn(32, 1)
    moved = []
    for _ in range(steps):
        before = [p.detach().clone() for p in model.parameters()]
        loss = torch.nn.functional.mse_loss(model(x.to(next(model.parameters()).dtype)).float(), y)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        moved.append(sum((p.detach().float() - b.float()).norm() ** 2 for p, b in zip(model.parameters(), before)).sqrt().item())
    return moved, [p.dtype for p in model.parameters()]
"""


def _run(source: str):
    return run_source(source)


def test_the_cast_model_raises_at_the_first_step_and_amplint_reports_the_cast():
    findings = lint_source(LOOP, settings=SELECT)
    assert [(f.code, f.location.row) for f in findings] == [("AMP005", 13)]
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
        _run(LOOP)


def test_the_fixed_loop_trains_float32_weights():
    fixed = fix_source(LOOP, settings=SELECT, unsafe=True)
    assert "    model.to(accelerator.device)\n" in fixed
    assert lint_source(fixed, settings=SELECT) == []
    moved, dtypes = _run(fixed)
    assert dtypes == [torch.float32, torch.float32]
    assert len(moved) == 3 and all(step > 0 for step in moved)
