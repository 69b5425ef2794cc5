"""Runtime truth for AMP005 and AMP006: the misuse shows its real symptom on CPU, the fixed script does not.

Each script in fixtures/runtime/ is run in a subprocess (CPU float16 autocast, GradScaler("cpu"),
synthetic data); then a copy is fixed with ``python -m amplint check --fix [--unsafe-fixes]
--select CODE`` and run again.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import sys

import pytest
from runtime_truth import RUNTIME, TIMEOUT, amplint_check, copy_script, fix_with_cli, last_json, run_script

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")



def _fixed_copy(tmp_path, name: str, code: str, unsafe: bool):
    copy = copy_script(tmp_path, name)
    fix_with_cli(copy, code, unsafe=unsafe)
    return copy


def test_amp005_half_model_raises_and_fixed_script_trains(tmp_path):
    name = "amp005_half_model.py"
    broken = run_script(RUNTIME / name)
    assert broken.returncode != 0
    assert "ValueError: Attempting to unscale FP16 gradients." in broken.stderr

    fixed_path = _fixed_copy(tmp_path, name, "AMP005", unsafe=True)
    assert '    model = build_model().to("cpu")\n' in fixed_path.read_text()
    report = last_json(run_script(fixed_path))
    assert report["param_dtype"] == "torch.float32"
    assert math.isfinite(report["first_loss"]) and math.isfinite(report["last_loss"])


def test_amp005_fix_is_unsafe_only(tmp_path):
    copy = tmp_path / "amp005_half_model.py"
    shutil.copy(RUNTIME / copy.name, copy)
    subprocess.run(
        [sys.executable, "-m", "amplint", "check", "--fix", "--no-cache", "--select", "AMP005", str(copy)],
        capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path,
    )
    assert copy.read_text() == (RUNTIME / copy.name).read_text(), "AMP005's fix must need --unsafe-fixes"


def test_amp006_resume_without_scaler_skips_a_burst_and_fixed_resume_does_not(tmp_path):
    name = "amp006_resume_without_scaler.py"
    broken = last_json(run_script(RUNTIME / name))
    # The first run overflowed and backed off: that history is what a resume must keep.
    assert broken["first_run_skipped"] >= 5
    assert broken["scale_at_save"] < 65536.0
    # Resumed without scaler state: back at 65536, the same burst of skipped steps again.
    assert broken["resumed_start_scale"] == 65536.0
    assert broken["resumed_skipped"] >= 5

    fixed_path = _fixed_copy(tmp_path, name, "AMP006", unsafe=False)
    text = fixed_path.read_text()
    assert '"scaler": scaler.state_dict()' in text
    assert 'scaler.load_state_dict(checkpoint["scaler"])' in text
    fixed = last_json(run_script(fixed_path))
    assert fixed["resumed_start_scale"] == fixed["scale_at_save"] == broken["scale_at_save"]
    assert fixed["resumed_skipped"] <= 1
    assert fixed["resumed_skipped"] < broken["resumed_skipped"]


def test_amp006_helper_checkpoint_in_another_module_resumes_at_the_saved_scale_once_fixed(tmp_path):
    """The scaler is forgotten at the calls into ckpt_utils.py; the fix of train.py (which needs the
    helper's summary from the other module) hands it over on both sides."""
    project = RUNTIME / "amp006_helper_resume"
    broken = last_json(run_script(project / "train.py"))
    assert broken["first_run_skipped"] >= 5
    assert broken["resumed_start_scale"] == 65536.0
    assert broken["resumed_skipped"] >= 5

    copy = tmp_path / "amp006_helper_resume"
    shutil.copytree(project, copy)
    text = fix_with_cli(copy / "train.py", "AMP006")
    assert "load_checkpoint(resume_from, model, optimizer, scaler=scaler)" in text
    assert "save_checkpoint(model, optimizer, stop, save_to, scaler=scaler)" in text
    assert (copy / "ckpt_utils.py").read_text() == (project / "ckpt_utils.py").read_text()
    fixed = last_json(run_script(copy / "train.py"))
    assert fixed["resumed_start_scale"] == fixed["scale_at_save"] == broken["scale_at_save"]
    assert fixed["resumed_skipped"] <= 1


def test_amp006_helper_in_another_module_is_not_followed_with_no_project(tmp_path):
    project = RUNTIME / "amp006_helper_resume"
    result = amplint_check(project / "train.py", "AMP006", "--no-project")
    assert result.returncode == 0, result.stdout
    assert amplint_check(project / "train.py", "AMP006").returncode == 1
