"""Runtime truth for AMP022 with the real Accelerate (the ``frameworks`` extra).

As in the AMP019 runtime test, the Accelerator gets the scaler a GPU fp16 run builds
(``torch.amp.GradScaler``, accelerate 1.16.0 ``accelerator.py:548-555``), as a CPU scaler,
before ``prepare``; everything after is Accelerate's and torch's code. The prepared optimizer's
``step()`` runs ``scaler.step(optimizer)`` (``optimizer.py:169-173``): after a plain
``loss.backward()`` the scaler has scaled nothing and raises at the first step. Once some
backward did scale (here one ``accelerator.backward`` first), each plain-backward step is the
true gradient divided by the scale. amplint's fix, ``accelerator.backward(loss)``, takes the
same step as plain fp32 SGD without Accelerate.
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
SELECT = {"select": ["AMP022"]}

LOOP = """\
import torch
from accelerate import Accelerator


def run(steps=3, lr=0.1, init_scale=1024.0):
    torch.manual_seed(0)
    accelerator = Accelerator(mixed_precision="fp16")
    if accelerator.scaler is None:  # a CPU: give it the scaler a GPU run builds
        accelerator.scaler = torch.amp.GradScaler("cpu", init_scale=init_scale)
        accelerator.native_amp = True
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    model, optimizer = accelerator.prepare(model, optimizer)
    x, y = torch.randn(32, 8), torch.randn(32, 1)
    moved = []
    for _ in range(steps):
        before = [p.detach().clone() for p in model.parameters()]
        loss = torch.nn.functional.mse_loss(model(x).float(), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        moved.append(sum((p.detach() - b).norm() ** 2 for p, b in zip(model.parameters(), before)).sqrt().item())
    return moved, accelerator.scaler.get_scale()
"""


def _reference_first_step(lr=0.1):
    """The first SGD update of the same model and batch, with no Accelerate at all."""
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    x, y = torch.randn(32, 8), torch.randn(32, 1)
    before = [p.detach().clone() for p in model.parameters()]
    torch.nn.functional.mse_loss(model(x), y).backward()
    torch.optim.SGD(model.parameters(), lr=lr).step()
    return sum((p.detach() - b).norm() ** 2 for p, b in zip(model.parameters(), before)).sqrt().item()


def _run(source: str):
    return run_source(source)


def test_plain_backward_fails_the_first_step():
    assert [f.code for f in lint_source(LOOP, settings=SELECT)] == ["AMP022"]
    with pytest.raises(AssertionError, match="Attempted step but _scale is None"):
        _run(LOOP)


def test_plain_backward_after_a_scaled_one_steps_a_scale_too_small():
    once_scaled = LOOP.replace(
        "    moved = []\n",
        "    accelerator.backward(torch.nn.functional.mse_loss(model(x).float(), y) * 0)\n"
        "    optimizer.step()\n    optimizer.zero_grad()\n    moved = []\n",
    )
    moved, scale = _run(once_scaled)
    assert scale == SCALE  # finite gradients: no step skipped, the scale kept
    assert moved[0] == pytest.approx(_reference_first_step() / SCALE, rel=1e-3)


def test_fixed_loop_takes_the_full_step():
    fixed = fix_source(LOOP, settings=SELECT, unsafe=True)
    assert "accelerator.backward(loss)" in fixed and "loss.backward()" not in fixed
    assert lint_source(fixed, settings=SELECT) == []
    moved, scale = _run(fixed)
    assert scale == SCALE
    assert moved[0] == pytest.approx(_reference_first_step(), rel=1e-3)


def test_backward_passes_keywords_on_and_divides_by_accumulation_steps():
    """What the fix relies on, and why it is unsafe (accelerator.py:2735-2767)."""
    import inspect

    assert list(inspect.signature(accelerate.Accelerator.backward).parameters) == ["self", "loss", "kwargs"]
    source = inspect.getsource(accelerate.Accelerator.backward)
    assert "loss = loss / self.gradient_accumulation_steps" in source
    assert "self.scaler.scale(loss).backward(**kwargs)" in source
