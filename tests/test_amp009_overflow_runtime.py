"""Runtime truth for AMP009's hand-written overflow check: skipping ``update()`` after ``unscale_``
makes the next iteration raise; without the check the scaler backs off and training goes on."""

from __future__ import annotations

import pytest
from runtime_truth import RUNTIME, amplint_check, copy_script, last_json, reported, run_script

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")

NAME = "amp009_overflow_check_skips_update.py"
CHECK = """        if not torch.isfinite(grad_norm):
            optimizer.zero_grad()
            continue
"""


def test_overflow_check_that_skips_update_is_reported_and_crashes_the_next_iteration():
    result = amplint_check(RUNTIME / NAME, "AMP009")
    assert result.returncode == 1
    assert f"{NAME}:34:12: AMP009 This check skips `scaler.step(...)` and `scaler.update()`" in result.stdout
    assert "unscale_() has already been called" in result.stdout

    broken = run_script(RUNTIME / NAME)
    assert broken.returncode != 0
    assert "RuntimeError: unscale_() has already been called on this optimizer since the last update()." in broken.stderr


def test_without_the_check_the_scaler_backs_off_and_steps_go_through(tmp_path):
    copy = copy_script(tmp_path, NAME)
    text = copy.read_text()
    assert CHECK in text
    copy.write_text(text.replace(CHECK, ""))
    assert not reported(copy, "AMP009")

    report = last_json(run_script(copy))
    assert report["final_scale"] < 65536.0
    assert report["applied_steps"] > 0
