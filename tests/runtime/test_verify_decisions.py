"""``--eval``: outputs and decisions of the trained models, AMP against the reference, on the
same fixed inputs; on a real classifier run on CPU, and on synthetic outputs."""

from __future__ import annotations

import json

import pytest

from verify_helpers import ROOT, run_cli, run_verify

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

RUNTIME = ROOT / "fixtures" / "runtime"
CLASSIFIER = RUNTIME / "verify_classifier.py"
BOUNDARY = "fixtures/runtime/verify_classifier.py:eval_boundary"
CLEAR = "fixtures/runtime/verify_classifier_eval.py:eval_clear"
OVERFLOW = "fixtures/runtime/verify_classifier_eval.py:eval_overflow"
ARGS = ["--steps", "20"]

# the keys of the JSON "evaluation" section, documented in docs/verify.md
EVALUATION_KEYS = {"function", "atol", "rtol", "threshold", "max_changed_frac", "amp", "reference", "inputs",
                   "nonfinite_inputs", "max_abs_diff", "max_rel_diff", "outside_tolerance", "per_input_abs_diff",
                   "decision", "changed", "changed_frac"}


def check(result, name):
    return next(c for c in result.checks if c.name == name)


def classify(spec, **kwargs):
    return run_verify(CLASSIFIER, args=ARGS, steps=20, evaluate=spec, **kwargs)


def test_a_decision_that_flips_on_a_boundary_input_fails_though_the_outputs_agree():
    from amplint.runtime.report import format_text

    result = classify(BOUNDARY)
    ev = result.evaluation
    assert result.exit_code == 1, format_text(result)
    assert check(result, "eval outputs finite").ok and check(result, "eval outputs within tolerance").ok
    assert 0 < ev["max_abs_diff"] and ev["max_rel_diff"] < 1e-2  # float16 changed the logits, a little
    assert ev["decision"] == "argmax" and ev["changed"] == [{"input": 4, "amp": 0, "reference": 1}]
    assert ev["changed_frac"] == pytest.approx(0.2)
    decisions = check(result, "eval decisions")
    assert not decisions.ok and "1 of 5 changed (20%, allowed 0%): input 4 (1 -> 0)" in decisions.detail
    assert ev["amp"]["dtype"] == "float16" and ev["reference"]["dtype"] == "float32"
    assert ev["amp"]["at_step"] == ev["reference"]["at_step"] == 19
    text = format_text(result)
    assert "decisions (argmax): 1 of 5 changed: inputs 4" in text
    assert text.splitlines()[-1] == "verdict: FAILED - eval decisions"
    doc = json.loads(json.dumps(result.to_dict(), default=str))
    assert set(doc["evaluation"]) == EVALUATION_KEYS


def test_decisions_far_from_the_boundary_do_not_flip_and_the_run_trains():
    result = classify(CLEAR)
    ev = result.evaluation
    assert result.exit_code == 0, [c.detail for c in result.checks]
    assert ev["changed"] == [] and ev["outside_tolerance"] == 0 and ev["max_abs_diff"] > 0
    assert check(result, "eval decisions").detail == "argmax: none of 4 changed"


def test_a_share_of_changed_decisions_allowed_before_the_run_passes():
    result = classify(BOUNDARY, eval_max_changed_frac=0.2)
    assert result.exit_code == 0 and result.evaluation["changed_frac"] == pytest.approx(0.2)
    assert any("at most 20% of the inputs" in line for line in result.criteria.describe())


def test_non_finite_outputs_under_float16_are_reported_per_input():
    result = classify(OVERFLOW)
    ev = result.evaluation
    assert ev["nonfinite_inputs"] == {"amp": [4], "reference": []}
    finite = check(result, "eval outputs finite")
    assert not finite.ok and finite.detail == "non-finite outputs for 1 of 5 inputs: inputs 4"
    assert result.exit_code == 1


def test_the_evaluation_panel_of_the_plot_shows_the_changed_input():
    from amplint.runtime.plot import build_figure

    fig = build_figure(classify(BOUNDARY))
    panel = fig.axes[2]
    assert "decisions (argmax) changed: 1 of 5" in panel.get_title(loc="left")
    assert [t.get_text() for t in panel.texts] == ["1->0"]
    assert fig.axes[0].get_title(loc="left").splitlines()[1] == "eval decisions"


def test_eval_through_the_command_line_in_separate_processes(tmp_path):
    out = tmp_path / "r.json"
    proc = run_cli("verify", CLASSIFIER, "--device", "cpu", "--steps", "20", "--eval", BOUNDARY,
                   "--eval-max-changed-frac", "0.25", "--no-progress", "--json", out, "--", "--steps", "20")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["evaluation"]["changed"] == [{"input": 4, "amp": 0, "reference": 1}]
    assert doc["criteria"]["eval_spec"] == BOUNDARY and doc["criteria"]["eval_max_changed_frac"] == 0.25


def test_verify_own_evaluation_does_not_count_as_the_script_using_amp(tmp_path):
    evaluator = tmp_path / "ev.py"
    evaluator.write_text("import torch\n\ndef ev(model):\n"
                         "    with torch.autocast('cpu', dtype=torch.float16):\n"
                         "        return model(torch.ones(3, 16))\n")
    result = run_verify(RUNTIME / "verify_no_amp.py", args=ARGS, steps=20, evaluate=f"{evaluator}:ev")
    assert result.exit_code == 4
    assert result.evaluation["inputs"] == 3 and not result.amp.amp_seen


def test_an_evaluation_that_cannot_run_is_an_error_not_a_verdict_on_amp(tmp_path):
    bad = run_verify(CLASSIFIER, args=ARGS, steps=5, evaluate=f"{CLASSIFIER}:no_such_function")
    assert bad.exit_code == 2 and bad.message.endswith("has no function no_such_function, in both runs")
    spec = run_verify(CLASSIFIER, args=ARGS, steps=5, evaluate="no_function_named")
    assert spec.exit_code == 2 and "give module:function or path.py:function" in spec.message
    assert spec.amp is None  # refused before any run


def test_a_run_stopped_before_its_first_step_has_no_evaluation_to_compare():
    result = run_verify(RUNTIME / "verify_half_model.py", args=ARGS, steps=20, evaluate=CLEAR)
    c = check(result, "eval decisions")
    assert not c.measured and "ValueError: Attempting to unscale FP16 gradients." in c.detail


# -- the comparison on synthetic outputs (no runs) ---------------------------------------------


def _side(outputs):
    import numpy as np

    return {"outputs": outputs, "shape": list(np.shape(outputs)), "dtype": "float32", "at_step": 9, "error": None}


def test_threshold_decisions_and_tolerances_fixed_before_the_run():
    from amplint.runtime.criteria import Criteria
    from amplint.runtime.decisions import compare

    crit = Criteria.make(10, 0.1, 0.1, "fp32", eval_spec="m:f", eval_atol=0.0, eval_rtol=0.05, eval_threshold=0.5)
    doc, checks = compare(crit, _side([0.49, 0.9, 0.1]), _side([0.51, 0.8, 0.1]))
    by_name = {c.name: c for c in checks}
    assert doc["decision"] == "score > 0.5" and doc["changed"] == [{"input": 0, "amp": 0, "reference": 1}]
    # 0.1 / 0.8 = 12.5% > 5%: outside; 0.02 / 0.51 = 3.9%: inside
    assert doc["outside_tolerance"] == 1 and not by_name["eval outputs within tolerance"].ok
    assert doc["max_abs_diff"] == pytest.approx(0.1) and doc["max_rel_diff"] == pytest.approx(0.125)


def test_one_score_per_input_without_a_threshold_has_no_decision_to_judge():
    from amplint.runtime.criteria import Criteria
    from amplint.runtime.decisions import compare

    crit = Criteria.make(10, 0.1, 0.1, "fp32", eval_spec="m:f")
    _, checks = compare(crit, _side([[0.2], [0.7]]), _side([[0.2], [0.7]]))
    decisions = next(c for c in checks if c.name == "eval decisions")
    assert not decisions.measured and "--eval-threshold" in decisions.detail


def test_a_non_finite_reference_output_is_no_reference():
    from amplint.runtime.criteria import Criteria
    from amplint.runtime.decisions import compare

    crit = Criteria.make(10, 0.1, 0.1, "fp32", eval_spec="m:f")
    _, checks = compare(crit, _side([[1.0, 2.0]]), _side([[float("nan"), 2.0]]))
    assert all(c.inconclusive for c in checks if c.name != "eval outputs finite")


def test_the_evaluation_panel_legend_tells_changed_inputs_apart():
    from amplint.runtime.plot import build_figure

    fig = build_figure(classify(BOUNDARY))
    legend = fig.axes[2].get_legend()
    colors = {t.get_text(): h.get_facecolor() for t, h in zip(legend.get_texts(), legend.legend_handles)}
    assert colors["largest output difference"] != colors["decision changed (reference -> AMP)"]
