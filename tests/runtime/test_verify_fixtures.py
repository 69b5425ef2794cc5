"""The fixture matrix, verified in-process on CPU (CUDA code remapped to CPU float16)."""

from __future__ import annotations

import pytest

from verify_helpers import FAMILIES, TRAINING, run_verify

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_fixed_script_trains_without_findings(family):
    result = run_verify(TRAINING / f"{family}_fixed.py")
    assert result.exit_code == 0, [c for c in result.checks if not c.ok]
    assert result.findings == []
    assert len(result.amp.steps) == 40
    assert result.amp.autocast_dtypes == ["float16"]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_broken_script_reports_its_finding(family):
    code, really_breaks = FAMILIES[family]
    result = run_verify(TRAINING / f"{family}_broken.py")
    codes = {f.code for f in result.findings}
    assert codes == {code}
    assert all(f.filename.endswith(f"{family}_broken.py") and f.location.row > 0 for f in result.findings)
    if really_breaks:
        assert result.exit_code == 1
        assert code in __import__("amplint.runtime.report", fromlist=["x"]).verdict_line(result)
    else:
        assert result.exit_code == 0


def test_correct_script_passes_with_measured_report():
    result = run_verify(TRAINING / "correct.py")
    assert result.exit_code == 0
    assert result.findings == []
    amp, ref = result.amp, result.reference
    assert ref is not None and len(ref.steps) == 40 and all(s.applied for s in ref.steps)
    # the remapped scaler is really enabled: it calibrates down from 2**16
    assert amp.steps[0].scale_before == 2.0**16 and not amp.steps[0].applied
    assert min(s.scale_after for s in amp.steps) < 2.0**16
    # the reference ran with every reduced-precision switch off
    assert ref.autocast_dtypes == [] and all(s.scale_before is None for s in ref.steps)
    assert amp.steps[0].loss == pytest.approx(ref.steps[0].loss, rel=1e-3)  # same seeds, same data


def test_expected_failures_are_the_right_ones():
    clip = run_verify(TRAINING / "clip_broken.py")
    failed = {c.name for c in clip.checks if not c.ok}
    assert failed == {"loss decrease"}  # stalled, not crashed
    resume = run_verify(TRAINING / "resume_broken.py")
    assert {c.name for c in resume.checks if not c.ok} == {"applied updates"}
    fp16 = run_verify(TRAINING / "fp16_model_broken.py")
    assert fp16.amp.status == "error" and "unscale FP16" in fp16.amp.error
    per_step = run_verify(TRAINING / "scaler_per_step_broken.py")
    assert per_step.amp.scalers_constructed == 40 and not any(s.applied for s in per_step.amp.steps)


def test_bf16_forced_needs_no_skips():
    result = run_verify(TRAINING / "correct.py", dtype="bfloat16", baseline="none")
    assert result.exit_code == 0
    assert result.amp.autocast_dtypes == ["bfloat16"]
    assert all(s.applied for s in result.amp.steps)


def test_natural_end_before_steps():
    result = run_verify(TRAINING / "correct.py", args=["--steps", "12"], steps=40)
    assert result.amp.status == "completed" and len(result.amp.steps) == 12


def test_script_needing_gpu_is_a_one_line_error():
    from amplint.runtime.report import format_text

    result = run_verify(TRAINING / "needs_gpu.py", args=[])
    assert result.exit_code == 2
    text = format_text(result)
    assert "\n" not in text and "GPU" in text and "needs_gpu.py:6" in text
