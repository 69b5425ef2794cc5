"""The acceptance criteria on synthetic step records (no torch, no runs)."""

from __future__ import annotations

from types import SimpleNamespace

from amplint.runtime.criteria import Criteria, calibration_skips, evaluate
from amplint.runtime.instrument import StepRecord


def steps(losses, applied=None):
    applied = applied or [True] * len(losses)
    return [
        StepRecord(i, 0.01, loss, None, None, a, loss != loss, not a, None, 8)
        for i, (loss, a) in enumerate(zip(losses, applied))
    ]


def run(losses, applied=None, status="stopped", error=None):
    return SimpleNamespace(status=status, steps=steps(losses, applied), error=error)


def names(checks):
    return {c.name for c in checks if not c.ok}


def test_matching_runs_pass():
    crit = Criteria.make(10, 0.1, 0.1, "fp32")
    ref = run([10 - i for i in range(10)])
    assert names(evaluate(crit, run([10 - i for i in range(10)]), ref)) == set()


def test_calibration_skips_are_not_counted_but_later_skips_are():
    assert calibration_skips(steps([1] * 5, [False, False, True, False, True])) == 2
    assert calibration_skips(steps([1] * 3, [False] * 3)) == 0  # never applied: nothing calibrated
    crit = Criteria.make(12, 0.5, 0.1, "none")
    ok = run([12 - i for i in range(12)], [False, False] + [True] * 10)
    assert names(evaluate(crit, ok, None)) == set()
    bad = run([12 - i for i in range(12)], [False, False] + [True] * 8 + [False, False])
    assert names(evaluate(crit, bad, None)) == {"applied updates"}


def test_reference_is_read_at_the_same_number_of_applied_updates():
    crit = Criteria.make(10, 0.0, 0.5, "fp32")
    # AMP skipped its first 3 steps (loss unchanged), then followed the reference exactly
    amp = run([10, 10, 10, 10, 9, 8, 7, 6, 5, 4], [False] * 3 + [True] * 7)
    ref = run([10 - i for i in range(10)])
    assert names(evaluate(crit, amp, ref)) == set()


def test_final_loss_above_tolerance_and_stalled_loss_fail():
    crit = Criteria.make(10, 0.1, 0.1, "fp32")
    ref = run([10 - i for i in range(10)])
    assert names(evaluate(crit, run([10, 9.9, 9.8, 9.7, 9.6, 9.5, 9.4, 9.3, 9.2, 9.1]), ref)) == {
        "final loss vs FP32",
        "loss decrease",
    }


def test_nonfinite_and_crash_fail():
    crit = Criteria.make(4, 0.1, 0.1, "none")
    assert "finite loss" in names(evaluate(crit, run([1.0, float("nan"), 1.0, 1.0]), None))
    crashed = run([1.0], status="error", error="ValueError: boom")
    assert "completes" in names(evaluate(crit, crashed, None))


def test_criteria_are_described_before_the_run():
    lines = Criteria.make(50, 0.05, 0.2, "fp32").describe()
    assert any("80%" in line for line in lines) and any("0.05" in line for line in lines)
