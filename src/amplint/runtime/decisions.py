"""The AMP run's evaluation outputs against the reference's, on the same fixed inputs (no torch).

Outputs are compared first, with tolerances fixed before the runs (an element is within them
when ``|amp - ref| <= atol + rtol * |ref|``), then the decisions made from them: the argmax of
each row (two or more outputs per input) or, with a threshold, ``score > threshold`` (one output
per input). A tiny difference can flip a decision near a boundary and a visible one can be
harmless, so the two are judged apart, and every changed input is listed.
"""

from __future__ import annotations

import math
from typing import Any

from .criteria import Check, Criteria

MAX_LISTED = 20  # changed inputs listed by index in the text; the JSON lists them all


def _rows(outputs: Any, shape: list[int]) -> list[list[float]]:
    """One flat row of floats per input (the leading dimension)."""
    if len(shape) == 1:
        return [[float(v)] for v in outputs]

    def flat(x: Any) -> list[float]:
        return [float(v) for y in x for v in flat(y)] if isinstance(x, list) else [float(x)]

    return [flat(row) for row in outputs]


def _decisions(rows: list[list[float]], threshold: float | None) -> tuple[str | None, list[Any]]:
    width = len(rows[0]) if rows else 0
    if threshold is not None:
        if width != 1:
            return None, []
        return f"score > {threshold:g}", [int(r[0] > threshold) if math.isfinite(r[0]) else None for r in rows]
    if width < 2:
        return None, []

    def argmax(r: list[float]) -> int | None:
        if not all(math.isfinite(v) for v in r):
            return None  # no decision from a row with NaN or inf in it
        return max(range(len(r)), key=lambda i: (r[i], -i))  # ties: the first, as torch.argmax

    return "argmax", [argmax(r) for r in rows]


def _nonfinite(rows: list[list[float]]) -> list[int]:
    return [i for i, r in enumerate(rows) if not all(math.isfinite(v) for v in r)]


def compare(crit: Criteria, amp: dict[str, Any] | None, ref: dict[str, Any] | None) -> tuple[dict[str, Any], list[Check]]:
    """(the JSON ``evaluation`` section, the criteria lines) for the two runs' evaluations."""
    doc: dict[str, Any] = {
        "function": crit.eval_spec, "atol": crit.eval_atol, "rtol": crit.eval_rtol,
        "threshold": crit.eval_threshold, "max_changed_frac": crit.eval_max_changed_frac,
        "amp": _side(amp), "reference": _side(ref), "inputs": None, "nonfinite_inputs": None,
        "max_abs_diff": None, "max_rel_diff": None, "outside_tolerance": None, "per_input_abs_diff": None,
        "decision": None, "changed": None, "changed_frac": None,
    }
    names = ["eval outputs finite", "eval outputs within tolerance", "eval decisions"]
    amp_error = (amp or {}).get("error") or ("the AMP run recorded no evaluation" if amp is None else None)
    if amp_error:
        return doc, [Check(n, False, f"not measured: {amp_error}", measured=False) for n in names]
    a_rows = _rows(amp["outputs"], amp["shape"])
    a_bad = _nonfinite(a_rows)
    doc["inputs"] = len(a_rows)
    doc["nonfinite_inputs"] = {"amp": a_bad, "reference": None}
    checks = [Check(names[0], not a_bad, f"non-finite outputs for {len(a_bad)} of {len(a_rows)} inputs: "
                    f"{_listed(a_bad)}" if a_bad else f"all {len(a_rows)} inputs finite")]
    ref_error = (ref or {}).get("error") or ("no reference run (--baseline none)" if ref is None else None)
    if ref_error:
        return doc, checks + [Check(n, False, f"not compared: {ref_error}", measured=False) for n in names[1:]]
    r_rows = _rows(ref["outputs"], ref["shape"])
    if ref["shape"] != amp["shape"]:
        why = f"the AMP run returned shape {amp['shape']}, the reference {ref['shape']}: not the same fixed batch"
        return doc, checks + [Check(n, False, why) for n in names[1:]]
    r_bad = _nonfinite(r_rows)
    doc["nonfinite_inputs"]["reference"] = r_bad
    if r_bad:
        why = (f"not compared: the reference's own outputs are non-finite for {len(r_bad)} input(s) "
               f"({_listed(r_bad)}): fix the script before comparing precisions")
        return doc, checks + [Check(n, False, why, inconclusive=True) for n in names[1:]]
    checks.append(_tolerance(crit, doc, a_rows, r_rows))
    checks.append(_decision_check(crit, doc, a_rows, r_rows))
    return doc, checks


def _side(run: dict[str, Any] | None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {k: run.get(k) for k in ("shape", "dtype", "at_step", "error")} | {"outputs": run.get("outputs")}


def _tolerance(crit: Criteria, doc: dict[str, Any], a_rows: list[list[float]], r_rows: list[list[float]]) -> Check:
    max_abs = max_rel = 0.0
    outside = 0
    per_input = []
    for a_row, r_row in zip(a_rows, r_rows):
        row_abs = 0.0
        for a, r in zip(a_row, r_row):
            if not math.isfinite(a):
                outside += 1
                row_abs = math.inf
                continue
            diff = abs(a - r)
            row_abs = max(row_abs, diff)
            max_abs = max(max_abs, diff)
            if r != 0:
                max_rel = max(max_rel, diff / abs(r))
            outside += diff > crit.eval_atol + crit.eval_rtol * abs(r)
        per_input.append(row_abs)
    total = sum(len(r) for r in r_rows)
    doc.update(max_abs_diff=max_abs, max_rel_diff=max_rel, outside_tolerance=outside, per_input_abs_diff=per_input)
    detail = (f"largest difference {max_abs:.3g} absolute, {max_rel:.3g} relative; {outside} of {total} outputs "
              f"outside atol {crit.eval_atol:g} + rtol {crit.eval_rtol:g} x |reference|")
    return Check("eval outputs within tolerance", outside == 0, detail)


def _decision_check(crit: Criteria, doc: dict[str, Any], a_rows: list[list[float]], r_rows: list[list[float]]) -> Check:
    rule, a_dec = _decisions(a_rows, crit.eval_threshold)
    _, r_dec = _decisions(r_rows, crit.eval_threshold)
    doc["decision"] = rule
    if rule is None:
        width = len(r_rows[0]) if r_rows else 0
        why = (f"--eval-threshold needs one output per input, not {width}" if crit.eval_threshold is not None
               else "one output per input: name a decision threshold with --eval-threshold")
        return Check("eval decisions", False, why, measured=False)
    changed = [{"input": i, "amp": a, "reference": r} for i, (a, r) in enumerate(zip(a_dec, r_dec)) if a != r]
    frac = len(changed) / len(r_dec) if r_dec else 0.0
    doc.update(changed=changed, changed_frac=frac)
    ok = frac <= crit.eval_max_changed_frac
    if not changed:
        return Check("eval decisions", ok, f"{rule}: none of {len(r_dec)} changed")
    listed = ", ".join(f"input {c['input']} ({_word(c['reference'])} -> {_word(c['amp'])})" for c in changed[:MAX_LISTED])
    more = f", and {len(changed) - MAX_LISTED} more" if len(changed) > MAX_LISTED else ""
    detail = (f"{rule}: {len(changed)} of {len(r_dec)} changed ({frac:.0%}, allowed {crit.eval_max_changed_frac:.0%}): "
              f"{listed}{more} (reference -> AMP)")
    return Check("eval decisions", ok, detail)


def _word(decision: Any) -> str:
    return "no decision (non-finite)" if decision is None else str(decision)


def _listed(indices: list[int]) -> str:
    shown = ", ".join(map(str, indices[:MAX_LISTED]))
    return "inputs " + shown + (f" and {len(indices) - MAX_LISTED} more" if len(indices) > MAX_LISTED else "")


def format_evaluation(doc: dict[str, Any]) -> list[str]:
    """The report's evaluation section (the criteria lines carry the verdicts)."""
    lines = [f"evaluation (--eval {doc['function']}):"]
    for side, label in (("amp", "AMP"), ("reference", "FP32 reference")):
        run = doc[side]
        if run is None:
            continue
        if run.get("error"):
            lines.append(f"  {label}: not evaluated: {run['error']}")
        else:
            lines.append(f"  {label}: outputs {run['dtype']} {tuple(run['shape'])} after step {run['at_step']}")
    if doc["max_abs_diff"] is not None:
        lines.append(f"  largest difference: {doc['max_abs_diff']:.4g} absolute, {doc['max_rel_diff']:.4g} relative "
                     f"(tolerance atol {doc['atol']:g}, rtol {doc['rtol']:g}, fixed before the runs)")
    if doc["changed"] is not None:
        lines.append(f"  decisions ({doc['decision']}): {len(doc['changed'])} of {doc['inputs']} changed"
                     + (": inputs " + ", ".join(str(c["input"]) for c in doc["changed"][:MAX_LISTED])
                        if doc["changed"] else ""))
    return lines


def draw_evaluation(ax: Any, doc: dict[str, Any]) -> None:
    """The plot's evaluation panel: per input, the largest AMP-vs-reference difference; the
    inputs whose decision changed in red, each labelled reference -> AMP."""
    per_input = doc.get("per_input_abs_diff")
    ax.set_xlabel("evaluation input")
    ax.set_ylabel("max |AMP - FP32|")
    if not per_input:
        why = (doc.get("amp") or {}).get("error") or (doc.get("reference") or {}).get("error") or "nothing compared"
        ax.text(0.5, 0.5, f"evaluation not compared: {why}"[:120], ha="center", va="center", transform=ax.transAxes,
                fontsize=8)
        return
    xs = list(range(len(per_input)))
    shown = [v if math.isfinite(v) else float("nan") for v in per_input]
    ax.bar(xs, shown, color="tab:blue")
    changed = doc.get("changed") or []
    for c in changed:
        ax.bar([c["input"]], [shown[c["input"]] or 0.0], color="tab:red")
        ax.annotate(f"{_word(c['reference'])}->{_word(c['amp'])}", (c["input"], shown[c["input"]] or 0.0),
                    ha="center", va="bottom", fontsize=8, color="tab:red")
    title = (f"evaluation: largest difference {doc['max_abs_diff']:.3g} abs / {doc['max_rel_diff']:.3g} rel; "
             f"decisions ({doc['decision'] or 'none'}) changed: {len(changed)} of {doc['inputs']}")
    ax.set_title(title, fontsize=9, loc="left")
    from matplotlib.patches import Patch

    handles = [Patch(color="tab:blue", label="largest output difference")]
    if changed:
        handles.append(Patch(color="tab:red", label="decision changed (reference -> AMP)"))
    ax.legend(handles=handles, fontsize=8)
    ax.margins(y=0.15)  # room for the labels above the bars
    ax.grid(alpha=0.3)
