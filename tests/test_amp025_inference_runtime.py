"""Runtime truth for AMP025: a GradScaler in code that never backpropagates changes nothing.

On CPU (torch 2.13 supports ``torch.amp.GradScaler("cpu")`` and bf16 autocast), the evaluation
below runs with the scaler and, after amplint's fix removes it, without: the predictions are
bit-for-bit the same, and the scaler never even allocates its scale (``_scale`` stays ``None``
until the first ``scale()``: torch ``amp/grad_scaler.py``, ``_lazy_init_scale_growth_tracker``).
"""

from __future__ import annotations

import pytest

from amplint.api import fix_source, lint_source

torch = pytest.importorskip("torch")

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

EVALUATE = """\
import torch


@torch.no_grad()
def evaluate(model, batches):
    scaler = torch.amp.GradScaler("cpu")
    predictions = []
    for x in batches:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            predictions.append(model(x).float())
    return torch.cat(predictions), locals().get("scaler")
"""


def _evaluate(source: str):
    namespace: dict = {}
    exec(compile(source, "<eval>", "exec"), namespace)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).eval()
    batches = [torch.randn(8, 16) for _ in range(3)]
    return namespace["evaluate"](model, batches)


def test_scaler_in_evaluation_does_nothing_and_the_fix_keeps_the_predictions():
    assert [f.code for f in lint_source(EVALUATE, settings={"select": ["AMP025"]})] == ["AMP025"]
    with_scaler, scaler = _evaluate(EVALUATE)
    assert scaler is not None and scaler._scale is None  # never scaled anything

    fixed = fix_source(EVALUATE, settings={"select": ["AMP025"]}, unsafe=True)
    assert "GradScaler" not in fixed
    assert lint_source(fixed, settings={"select": ["AMP025"]}) == []
    without_scaler, gone = _evaluate(fixed)
    assert gone is None
    assert torch.equal(with_scaler, without_scaler)
