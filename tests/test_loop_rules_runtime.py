"""Runtime proof for AMP002/AMP003/AMP004: fix a real CPU training script, then run it.

fixtures/runtime/three_misuses.py builds a GradScaler every step (AMP004), runs the scaled
backward inside autocast (AMP002) and clips before `unscale_` (AMP003). CPU autocast in float16
with `torch.amp.GradScaler("cpu")` keeps the scaler enabled, so the misuse is observable: the
broken script's clip sees the scaled norm (~65536x the true one) and the loss does not move.
After `amplint check --fix` the three findings are gone, the loss decreases, and the norm the clip
acts on matches an fp32 reference run of the same script.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")

SCRIPT = Path(__file__).resolve().parents[1] / "fixtures" / "runtime" / "three_misuses.py"
CODES = "AMP002,AMP003,AMP004"


def _amplint(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "amplint", "check", "--no-cache", "--select", CODES, *args],
        capture_output=True, text=True, timeout=300,
    )


def _run(path: Path, *args: str) -> list[dict]:
    proc = subprocess.run([sys.executable, str(path), "--steps", "60", *args], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("three_misuses")
    broken = tmp / "broken.py"
    fixed = tmp / "fixed.py"
    shutil.copy(SCRIPT, broken)
    shutil.copy(SCRIPT, fixed)
    before = _amplint("--output-format", "concise", "--exit-zero", str(broken))
    fix = _amplint("--fix", str(fixed))
    after = _amplint("--output-format", "concise", str(fixed))
    return {
        "before": before,
        "fix": fix,
        "after": after,
        "fixed_text": fixed.read_text(encoding="utf-8"),
        "reference": _run(broken, "--fp32"),
        "broken": _run(broken),
        "fixed": _run(fixed),
    }


def test_the_script_has_all_three_findings(runs):
    codes = {line.split()[1] for line in runs["before"].stdout.splitlines() if ": AMP" in line}
    assert codes == {"AMP002", "AMP003", "AMP004"}, runs["before"].stdout


def test_fix_removes_all_three_findings(runs):
    assert runs["after"].returncode == 0, runs["after"].stdout + runs["after"].stderr
    text = runs["fixed_text"]
    # one scaler for the whole run, backward after the autocast block, unscale_ before the clip
    assert text.index('scaler = torch.amp.GradScaler("cpu"') < text.index("for step in range")
    assert "\n        scaler.scale(loss).backward()\n        scaler.unscale_(optimizer)\n        total_norm = " in text


def test_broken_run_clips_the_scaled_norm_and_does_not_train(runs):
    reference, broken = runs["reference"], runs["broken"]
    assert all(r["scale"] == 65536.0 for r in broken), "a fresh scaler each step never moves its scale"
    ratio = broken[0]["clip_norm"] / reference[0]["clip_norm"]
    assert 0.5 * 65536 < ratio < 2 * 65536, ratio
    assert broken[-1]["loss"] > 0.8 * broken[0]["loss"], "the clipped-to-1/65536 gradient barely moves the loss"


def test_fixed_run_trains_and_clips_unscaled_gradients(runs):
    reference, fixed = runs["reference"], runs["fixed"]
    assert len(fixed) == len(reference) == 60
    assert all(torch.isfinite(torch.tensor(r["loss"])) for r in fixed)
    assert fixed[-1]["loss"] < 0.5 * fixed[0]["loss"]
    for ours, ref in zip(fixed[:10], reference[:10]):
        assert ours["clip_norm"] == pytest.approx(ref["clip_norm"], rel=0.05)
    assert max(r["clip_norm"] for r in fixed) < 100 * max(r["clip_norm"] for r in reference)
    assert fixed[-1]["loss"] == pytest.approx(reference[-1]["loss"], rel=0.2)
