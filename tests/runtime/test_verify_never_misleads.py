"""verify says no more than it measured: a broken reference, a script without AMP, runtime
findings, runs that stopped before their first step and noisy runs, on real scripts run on CPU."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from verify_helpers import ROOT, run_cli, run_verify

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

RUNTIME = ROOT / "fixtures" / "runtime"
STEPS = 20
ARGS = ["--steps", str(STEPS)]


def check(result, name):
    return next(c for c in result.checks if c.name == name)


def line_of(path, text):
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


# -- 1. the reference is checked before it judges ----------------------------------------------


def test_a_script_that_diverges_on_its_own_is_inconclusive_and_says_where_the_reference_broke():
    from amplint.runtime.report import format_text

    result = run_verify(RUNTIME / "verify_diverging_lr.py", args=ARGS, steps=STEPS)
    bad = next(s.index for s in result.reference.steps if s.nonfinite_loss)
    assert result.exit_code == 3, format_text(result)
    assert result.message == (f"the FP32 reference itself is not finite from step {bad}: "
                              "fix the script before comparing precisions")
    for name in ("final loss vs FP32", "loss decrease"):
        c = check(result, name)
        assert c.inconclusive and c.detail.startswith("not compared: the FP32 reference itself is not finite")
    text = format_text(result)
    assert f"verdict: INCONCLUSIVE - the FP32 reference itself is not finite from step {bad}" in text
    row = next(line for line in text.splitlines() if line.startswith("first non-finite loss"))
    assert row.split()[-2:] == ["step", str(bad)]
    doc = result.to_dict()
    assert doc["verdict"] == "inconclusive" and doc["message"] == result.message
    assert doc["stats"]["reference"]["first_nonfinite_step"] == bad
    # the reference's own last steps are all non-finite: its final loss is none, not an early step's
    assert doc["stats"]["reference"]["final_loss"] is None and doc["stats"]["reference"]["final_loss_finite"] == 0
    assert "- (none finite)" in next(line for line in text.splitlines() if line.startswith("loss final"))


def test_a_finite_but_diverging_reference_is_no_reference():
    from amplint.runtime.criteria import Criteria
    from amplint.runtime.verdict import decide

    crit = Criteria.make(10, 0.1, 0.1, "fp32")
    growing = runs([1.0 * 3 ** i for i in range(10)])
    result = SimpleNamespace(criteria=crit, checks=[], message="")
    code, reason = decide(result, runs([1.0] * 10), growing)
    assert code == 3 and reason.startswith("the FP32 reference itself diverges (loss 1 at step 0")


def test_the_final_loss_is_the_mean_of_the_finite_ones_and_says_how_many():
    from amplint.runtime.criteria import Criteria, loss_summary

    crit = Criteria.make(20, 0.1, 0.1, "fp32")  # k = 4
    amp = runs([5.0] * 16 + [2.0, float("nan"), 4.0, float("inf")]).steps
    summ = loss_summary(crit, amp, None)
    assert summ["amp_final"] == 3.0 and summ["amp_final_n"] == 2 and summ["tail"] == 4


# -- 2. nothing to compare is not a pass -------------------------------------------------------


def test_a_script_without_amp_is_its_own_verdict_unless_allowed():
    from amplint.runtime.report import format_text

    result = run_verify(RUNTIME / "verify_no_amp.py", args=ARGS, steps=STEPS)
    assert result.exit_code == 4 and result.to_dict()["verdict"] == "no amp"
    assert format_text(result).splitlines()[-1] == (
        "verdict: NO AMP - no enabled autocast region or GradScaler was seen, so nothing about AMP was "
        "compared; pass --allow-no-amp to judge the run anyway")
    allowed = run_verify(RUNTIME / "verify_no_amp.py", args=ARGS, steps=STEPS, allow_no_amp=True)
    assert allowed.exit_code == 0
    assert any("nothing about AMP was compared" in w for w in allowed.warnings)


def test_no_amp_exit_code_through_the_command_line():
    proc = run_cli("verify", RUNTIME / "verify_no_amp.py", "--device", "cpu", "--steps", "5", "--baseline", "none",
                   "--no-progress", "--", "--steps", "5")
    assert proc.returncode == 4, proc.stdout + proc.stderr[-2000:]
    assert "verdict: NO AMP - " in proc.stdout
    proc = run_cli("verify", RUNTIME / "verify_no_amp.py", "--device", "cpu", "--steps", "5", "--baseline", "none",
                   "--allow-no-amp", "--no-progress", "--", "--steps", "5")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]


# -- 3. runtime findings belong to the verdict -------------------------------------------------

DDP_CLIP = RUNTIME / "ddp_clip_before_unscale.py"


def test_ddp_clip_before_unscale_trains_and_the_verdict_line_names_its_finding(tmp_path):
    out = tmp_path / "r.json"
    proc = run_cli("verify", "--nproc-per-node", "2", DDP_CLIP, "--device", "cpu", "--steps", "20",
                   "--max-skipped-frac", "0.2", "--no-progress", "--json", out, "--", "--steps", "20", "--lr", "3e-4")
    line = line_of(DDP_CLIP, "clip_grad_norm_")
    verdict = proc.stdout.strip().splitlines()[-1]
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert verdict.startswith(
        f"verdict: TRAINS, with 1 runtime finding: AMP003 at fixtures/runtime/ddp_clip_before_unscale.py:{line} - ")
    assert [f["code"] for f in json.loads(out.read_text())["findings"]] == ["AMP003"]


def test_fail_on_findings_fails_a_run_that_trains():
    result = run_verify(DDP_CLIP, args=["--steps", "20", "--lr", "3e-4"], steps=20, max_skipped_frac=0.2,
                        fail_on_findings=True)
    findings = check(result, "runtime findings")
    assert result.exit_code == 1 and not findings.ok
    assert findings.detail == f"AMP003 at fixtures/runtime/ddp_clip_before_unscale.py:{line_of(DDP_CLIP, 'clip_grad_norm_')}"
    assert all(c.ok for c in result.checks if c.name != "runtime findings")
    assert "no runtime finding (--fail-on-findings)" in result.criteria.describe()


# -- 4. every criterion line is true -----------------------------------------------------------


def test_a_run_stopped_before_its_first_step_measures_nothing_and_names_the_exception():
    from amplint.runtime.report import format_text

    script = RUNTIME / "verify_half_model.py"
    result = run_verify(script, args=ARGS, steps=STEPS)
    site = f"fixtures/runtime/verify_half_model.py:{line_of(script, 'scaler.step(optimizer)')}"
    cause = f"ValueError: Attempting to unscale FP16 gradients. at {site} (scaler.step(optimizer))"
    assert result.exit_code == 1
    assert check(result, "completes").detail == f"raised {cause}"
    for name in ("finite loss", "applied updates", "final loss vs FP32", "loss decrease"):
        c = check(result, name)
        assert not c.measured and c.detail == f"the run stopped before its first step: {cause}", c
    text = format_text(result)
    assert "need >= 0" not in text and "no backward on a scalar" not in text
    assert f"[not measured] applied updates: the run stopped before its first step: {cause}" in text
    # only what was measured failed
    assert text.splitlines()[-1].endswith(" - completes")
    assert {c["name"]: c["measured"] for c in result.to_dict()["checks"]}["finite loss"] is False


def test_a_noisy_healthy_run_is_inconclusive_with_and_without_a_baseline():
    script = RUNTIME / "verify_noisy_healthy.py"
    with_ref = run_verify(script, args=ARGS, steps=STEPS)
    alone = run_verify(script, args=ARGS, steps=STEPS, baseline="none")
    assert with_ref.exit_code == 3
    assert alone.exit_code == 3, [c.detail for c in alone.checks]
    decrease = check(alone, "loss decrease")
    assert decrease.inconclusive and "the run's own noise" in decrease.detail
    from amplint.runtime.report import verdict_line

    assert verdict_line(alone) == "verdict: INCONCLUSIVE - the run's own noise cannot decide loss decrease; run more --steps"


def test_without_a_baseline_a_clear_rise_fails_and_a_clear_decrease_passes():
    from amplint.runtime.criteria import Criteria, evaluate

    crit = Criteria.make(20, 0.1, 0.1, "none")
    wiggle = [0.3 if i % 2 else -0.3 for i in range(20)]
    falling = evaluate(crit, runs([10 - 0.4 * i + w for i, w in enumerate(wiggle)]), None)
    rising = evaluate(crit, runs([2 + 0.4 * i + w for i, w in enumerate(wiggle)]), None)
    assert next(c for c in falling if c.name == "loss decrease").ok
    bad = next(c for c in rising if c.name == "loss decrease")
    assert not bad.ok and not bad.inconclusive


def runs(losses):
    from amplint.runtime.telemetry import StepRecord

    steps = [StepRecord(i, 0.01, v, None, None, True, v is not None and (v != v or abs(v) == float("inf")), False,
                        None, 8)
             for i, v in enumerate(losses)]
    return SimpleNamespace(status="stopped", steps=steps, error=None, needs_gpu=False, timed_out=False,
                           interrupted=False, findings=[], amp_seen=True, traceback=[])


# -- 6. the plot -------------------------------------------------------------------------------


def _lines(ax):
    return {line.get_label(): line for line in ax.get_lines()}


def test_the_plot_shows_both_runs_distinctly_with_the_reference_on_top(tmp_path):
    from amplint.runtime.plot import build_figure, write_plot

    result = run_verify(ROOT / "fixtures" / "training" / "correct.py")
    assert result.exit_code == 0
    fig = build_figure(result)
    amp, ref = _lines(fig.axes[0])["AMP"], _lines(fig.axes[0])["FP32 reference"]
    assert (amp.get_linestyle(), ref.get_linestyle()) == ("-", "--")
    assert ref.get_marker() == "o" and ref.get_markerfacecolor() == "none"
    assert ref.get_zorder() > amp.get_zorder() and ref.get_color() != amp.get_color()
    assert len(ref.get_xdata()) == len(result.reference.steps)
    assert fig.axes[0].get_title(loc="left").splitlines() == [
        f"amplint verify {result.target}: TRAINS", f"{result.target} passed every criterion"]
    write_plot(result, str(tmp_path / "p.png"))
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


def test_the_plot_marks_where_the_reference_broke_and_says_why_in_its_title():
    from amplint.runtime.plot import build_figure

    result = run_verify(RUNTIME / "verify_diverging_lr.py", args=ARGS, steps=STEPS)
    bad_ref = next(s.index for s in result.reference.steps if s.nonfinite_loss)
    bad_amp = next(s.index for s in result.amp.steps if s.nonfinite_loss)
    fig = build_figure(result)
    lines = _lines(fig.axes[0])
    marker = lines[f"FP32 reference: loss non-finite from step {bad_ref}"]
    assert list(marker.get_xdata()) == [bad_ref, bad_ref]
    assert f"AMP: loss non-finite from step {bad_amp}" in lines
    # only finite points are drawn, on a log scale that keeps the first steps visible
    assert len(lines["FP32 reference"].get_xdata()) == bad_ref and fig.axes[0].get_yscale() == "log"
    title = fig.axes[0].get_title(loc="left")
    assert title.startswith(f"amplint verify {result.target}: INCONCLUSIVE\n")
    assert f"not finite from step {bad_ref}" in title.replace("\n", " ")


def test_a_criterion_not_measured_makes_the_verdict_inconclusive_not_failed():
    from amplint.runtime.criteria import Criteria
    from amplint.runtime.verdict import decide

    crit = Criteria.make(10, 0.1, 0.1, "none")
    no_loss = runs([None] * 10)  # steps, but no loss the hooks could see
    result = SimpleNamespace(criteria=crit, checks=[], message="")
    code, reason = decide(result, no_loss, None)
    assert code == 3 and reason.startswith("finite loss not measured: no loss was seen in 10 step(s)")


def test_a_finding_still_fails_a_run_whose_reference_is_broken_and_the_reason_says_only_that():
    from amplint.model import Finding, Location, Severity
    from amplint.runtime.criteria import Criteria
    from amplint.runtime.verdict import decide

    crit = Criteria.make(10, 0.1, 0.1, "fp32", fail_on_findings=True)
    amp = runs([1.0] * 10)
    amp.findings = [Finding("AMP003", "m", "train.py", Location(7, 1), Location(7, 1), Severity.ERROR)]
    result = SimpleNamespace(criteria=crit, checks=[], message="")
    code, reason = decide(result, amp, runs([1.0, float("nan")] + [1.0] * 8))
    assert code == 1
    assert reason == "runtime findings (and the FP32 reference itself is not finite from step 1)"


def test_a_reference_that_raises_is_inconclusive_and_names_the_failure_and_its_line():
    from amplint.runtime.report import format_text

    script = RUNTIME / "verify_reference_raises.py"
    result = run_verify(script, args=ARGS, steps=STEPS)
    assert result.amp.status != "error" and result.reference.status == "error"
    assert result.exit_code == 3, format_text(result)
    line = line_of(script, "scaler._scale.item()")
    assert result.message.startswith(f"the FP32 reference itself failed after {len(result.reference.steps)} step")
    assert "AttributeError" in result.message and f"verify_reference_raises.py:{line}" in result.message
    assert result.message.endswith("fix the script before comparing precisions")
    assert "verdict: INCONCLUSIVE - the FP32 reference itself failed" in format_text(result)
