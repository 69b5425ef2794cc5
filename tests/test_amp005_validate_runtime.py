"""Runtime truth for AMP005 in a validate function: an in-place ``model.half()`` called once per
epoch breaks the next epoch's ``scaler.step``; validating a copy keeps training, and AMP005 says
nothing about that version."""

from __future__ import annotations

import math

import pytest
from runtime_truth import RUNTIME, amplint_check, copy_script, last_json, reported, run_script

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")

NAME = "amp005_half_in_validate.py"


def test_in_place_half_in_validate_is_reported_and_breaks_the_next_epoch():
    result = amplint_check(RUNTIME / NAME, "AMP005")
    assert result.returncode == 1
    assert f"{NAME}:17:5: AMP005 `validate` casts the trained model to float16 in place" in result.stdout

    broken = run_script(RUNTIME / NAME)
    assert broken.returncode != 0
    assert "ValueError: Attempting to unscale FP16 gradients." in broken.stderr


def test_validating_a_copy_trains_and_is_not_reported(tmp_path):
    copy = copy_script(tmp_path, NAME)
    text = copy.read_text()
    assert "    model.half()\n" in text
    copy.write_text(text.replace("    model.half()\n", "    model = copy.deepcopy(model).half()\n"))
    assert not reported(copy, "AMP005")

    report = last_json(run_script(copy))
    assert report["param_dtype"] == "torch.float32"
    assert all(math.isfinite(v) for v in report["val_losses"])
    assert report["last_loss"] < report["first_loss"]
