"""The acceptance criteria on synthetic step records (no torch, no runs)."""

from __future__ import annotations

from types import SimpleNamespace

from amplint.runtime.criteria import Criteria, calibration_skips, evaluate
from amplint.runtime.telemetry import StepRecord


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


def verdict(crit, amp, ref):
    from amplint.runtime.verdict import decide

    result = SimpleNamespace(criteria=crit, checks=[], message="")
    code, _ = decide(result, amp, ref)
    return code, result.checks


def outcome(losses, applied=None):
    r = run(losses, applied)
    r.needs_gpu = r.timed_out = r.interrupted = False
    r.findings = []
    return r


def test_identical_runs_whose_reference_does_not_decrease_are_inconclusive_not_failed():
    crit = Criteria.make(10, 0.1, 0.1, "fp32")
    rising = [1 + 0.01 * i for i in range(10)]
    code, checks = verdict(crit, outcome(rising), outcome(rising))
    assert code == 3
    assert {c.name for c in checks if c.inconclusive} == {"loss decrease"}
    assert all(c.ok for c in checks if not c.inconclusive)


def test_a_miss_within_the_reference_noise_is_inconclusive():
    crit = Criteria.make(20, 0.01, 0.1, "fp32")
    # the reference jumps by +/-1 around a slow decline: its final mean is uncertain by far
    # more than 1% of its value
    ref = [10 - 0.2 * i + (1 if i % 2 else -1) for i in range(20)]
    amp = [v * 1.03 for v in ref]
    code, checks = verdict(crit, outcome(amp), outcome(ref))
    final = next(c for c in checks if c.name == "final loss vs FP32")
    assert not final.ok and final.inconclusive and "noise" in final.detail
    assert code == 3


def test_a_clear_miss_with_a_quiet_reference_still_fails():
    crit = Criteria.make(10, 0.1, 0.1, "fp32")
    ref = outcome([10 - i for i in range(10)])
    code, checks = verdict(crit, outcome([10 - 0.1 * i for i in range(10)]), ref)
    assert code == 1 and not any(c.inconclusive for c in checks)


def test_a_hard_failure_wins_over_an_inconclusive_comparison():
    crit = Criteria.make(10, 0.1, 0.1, "fp32")
    flat = [1.0] * 10
    code, _ = verdict(crit, outcome([1.0, float("nan")] + [1.0] * 8), outcome(flat))
    assert code == 1


def test_ranks_are_merged_by_precedence_not_by_number():
    from amplint.runtime.verdict import worst

    assert worst([0, 3]) == 3 and worst([3, 1]) == 1 and worst([1, 2, 3]) == 2 and worst([0, 0]) == 0
