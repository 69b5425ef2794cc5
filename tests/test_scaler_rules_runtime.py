"""Runtime truth for the GradScaler state-machine rules (AMP007, AMP008, AMP009, AMP012).

Each script in fixtures/runtime/ is a small CPU training loop (synthetic data, float16 CPU
autocast, ``torch.amp.GradScaler("cpu")``) holding one misuse. It is run in a subprocess to show
the misuse's real symptom; then a copy is fixed with ``python -m amplint check --fix --select
CODE`` and run again: the symptom is gone and the loss decreases.
"""

from __future__ import annotations

import json
import math

import pytest
from runtime_truth import RUNTIME, copy_script, fix_with_cli, last_json, reported, run_script

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")


def test_amp007_bypass_blows_up_the_weights_and_the_fixed_loop_trains(tmp_path):
    name = "amp007_step_bypasses_scaler.py"
    assert reported(RUNTIME / name, "AMP007")
    broken = last_json(run_script(RUNTIME / name))
    # Stepping on gradients 65536x too large: the weights and the loss leave the finite range.
    assert broken["last_loss"] == "nan" or broken["last_loss"] > 1e6
    assert broken["max_abs_weight"] == "nan" or broken["max_abs_weight"] > 1e3

    copy = copy_script(tmp_path, name)
    text = fix_with_cli(copy, "AMP007")
    assert "        scaler.step(optimizer)\n" in text and "        optimizer.step()\n" not in text
    # The step now goes through the scaler, which needs an update() per iteration: AMP009's job.
    halfway = run_script(copy)
    assert halfway.returncode != 0
    assert "step() has already been called since the last update()" in halfway.stderr
    text = fix_with_cli(copy, "AMP009")
    assert "        scaler.step(optimizer)\n        scaler.update()\n" in text
    fixed = last_json(run_script(copy))
    assert math.isfinite(fixed["last_loss"]) and fixed["last_loss"] < fixed["first_loss"] / 3
    assert fixed["max_abs_weight"] < 100


def test_amp008_unscaled_backward_raises_and_the_fixed_loop_trains(tmp_path):
    name = "amp008_unscaled_backward.py"
    assert reported(RUNTIME / name, "AMP008")
    broken = run_script(RUNTIME / name)
    assert broken.returncode != 0
    assert "AssertionError: Attempted step but _scale is None." in broken.stderr

    copy = copy_script(tmp_path, name)
    text = fix_with_cli(copy, "AMP008")
    assert "        scaler.scale(loss).backward()\n" in text
    fixed = last_json(run_script(copy))
    assert fixed["last_loss"] < fixed["first_loss"] / 3


def test_amp008_discarded_scale_leaves_the_loss_flat_and_the_fixed_loop_trains(tmp_path):
    name = "amp008_discarded_scale.py"
    assert reported(RUNTIME / name, "AMP008")
    broken = last_json(run_script(RUNTIME / name))
    # The unscaled gradients are divided by 65536: the loss barely moves in 60 steps.
    assert broken["last_loss"] > 0.9 * broken["first_loss"]

    copy = copy_script(tmp_path, name)
    text = fix_with_cli(copy, "AMP008")
    assert "        scaler.scale(loss).backward()\n" in text and "        scaler.scale(loss)\n" not in text
    fixed = last_json(run_script(copy))
    assert fixed["first_loss"] == pytest.approx(broken["first_loss"])
    assert fixed["last_loss"] < fixed["first_loss"] / 3


def test_amp009_missing_update_raises_and_the_fixed_scale_adapts(tmp_path):
    name = "amp009_missing_update.py"
    assert reported(RUNTIME / name, "AMP009")
    broken = run_script(RUNTIME / name)
    assert broken.returncode != 0
    assert "RuntimeError: step() has already been called since the last update()." in broken.stderr

    copy = copy_script(tmp_path, name)
    text = fix_with_cli(copy, "AMP009")
    assert "        scaler.step(optimizer)\n        scaler.update()\n" in text
    fixed = last_json(run_script(copy))
    assert fixed["last_loss"] < fixed["first_loss"] / 3
    assert len(fixed["scales"]) > 1, "with update() the scale must adapt"


def test_amp012_update_per_microbatch_asserts_and_the_fixed_loop_trains(tmp_path):
    name = "amp012_update_per_microbatch.py"
    assert reported(RUNTIME / name, "AMP012")
    broken = run_script(RUNTIME / name)
    assert broken.returncode != 0
    assert "AssertionError: No inf checks were recorded prior to update." in broken.stderr

    copy = copy_script(tmp_path, name)
    text = fix_with_cli(copy, "AMP012")
    assert "            scaler.step(optimizer)\n            scaler.update()\n" in text
    assert "        scaler.update()\n" not in text.replace("            scaler.update()\n", "")
    fixed = last_json(run_script(copy))
    assert fixed["last_loss"] < fixed["first_loss"] / 3


def test_amp008_fix_with_an_optional_scaler_trains_with_amp_and_leaves_fp32_unchanged(tmp_path):
    name = "amp008_optional_scaler.py"
    assert reported(RUNTIME / name, "AMP008")
    broken = run_script(RUNTIME / name)
    assert broken.returncode != 0
    assert "AssertionError: Attempted step but _scale is None." in broken.stderr
    fp32_before = json.loads(broken.stdout.strip().splitlines()[0])
    assert fp32_before["amp"] is False

    copy = copy_script(tmp_path, name)
    text = fix_with_cli(copy, "AMP008")
    assert "        (self.scaler.scale(loss) if self.scaler is not None else loss).backward()\n" in text
    fixed = run_script(copy)
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    fp32_after, amp_after = (json.loads(line) for line in fixed.stdout.strip().splitlines()[-2:])
    # The path without a scaler computes exactly what it did before the fix.
    assert fp32_after["losses"] == fp32_before["losses"]
    assert amp_after["amp"] is True and amp_after["last_loss"] < amp_after["first_loss"] / 3
