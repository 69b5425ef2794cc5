"""Runtime truth for AMP017's handled-overflow exception: the loops below run on CPU with a
GradScaler and gradients that overflow on some steps.

A handler that catches the clip's RuntimeError, skips the step and still calls ``update()`` keeps
training and backs the scale off (amplint is silent); one that skips to the next batch without
``update()`` crashes at the next ``unscale_`` (amplint reports it), and so does the plain clip
(amplint reports it, and the fixed loop trains).
"""

from __future__ import annotations

import pytest

from amplint.api import fix_source, lint_source

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")

PRELUDE = """\
import torch

def run(steps=6, overflow_steps=(1, 3)):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    scales = []
    for step in range(steps):
        loss = torch.nn.functional.mse_loss(model(x), y)
        if step in overflow_steps:
            loss = loss * float("inf")
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
"""

HANDLED = PRELUDE + """\
        try:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
            scaler.step(optimizer)
        except RuntimeError:
            pass
        scaler.update()
        optimizer.zero_grad()
        scales.append(scaler.get_scale())
    return scales
"""

SKIPS_UPDATE = PRELUDE + """\
        try:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
        except RuntimeError:
            optimizer.zero_grad()
            continue
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        scales.append(scaler.get_scale())
    return scales
"""

PLAIN = PRELUDE + """\
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        scales.append(scaler.get_scale())
    return scales
"""


def _run(source: str):
    namespace: dict = {}
    exec(compile(source, "<loop>", "exec"), namespace)
    return namespace["run"]()


def _codes(source: str) -> list[str]:
    return [f.code for f in lint_source(source, settings={"select": ["AMP017"]})]


def test_a_handler_that_skips_the_step_and_updates_trains_on_and_is_not_reported():
    scales = _run(HANDLED)
    # each overflow halves the scale, as scaler.step's own skip would
    assert scales == [1024.0, 512.0, 512.0, 256.0, 256.0, 256.0]
    assert _codes(HANDLED) == []


def test_a_handler_that_skips_the_update_crashes_at_the_next_unscale_and_is_reported():
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        _run(SKIPS_UPDATE)
    assert _codes(SKIPS_UPDATE) == ["AMP017"]


def test_the_plain_clip_crashes_is_reported_and_the_fixed_loop_trains():
    with pytest.raises(RuntimeError, match="non-finite"):
        _run(PLAIN)
    assert _codes(PLAIN) == ["AMP017"]
    fixed = fix_source(PLAIN, settings={"select": ["AMP017"]})
    assert "error_if_nonfinite" not in fixed
    assert _run(fixed) == [1024.0, 512.0, 512.0, 256.0, 256.0, 256.0]
