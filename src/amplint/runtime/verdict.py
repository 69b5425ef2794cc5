"""From two run outcomes and the criteria to an exit code and, for errors, the one-line reason.

Order of precedence: could not run (2) > nothing about AMP was compared (4) > a criterion failed
(1) > the reference cannot decide (3) > trains (0). A script that fails the same way without AMP
is an error, not a failed AMP run; a reference that raises, or whose own loss is non-finite or
diverges, cannot fail the AMP run either (inconclusive), though a runtime finding under --fail-on-findings still does.
"""

from __future__ import annotations

from typing import Any

from .criteria import Check, evaluate, short_path

EXIT_OK, EXIT_FAILED, EXIT_ERROR, EXIT_INCONCLUSIVE, EXIT_NO_AMP = 0, 1, 2, 3, 4
VERDICTS = {EXIT_OK: "trains", EXIT_FAILED: "failed", EXIT_ERROR: "error", EXIT_INCONCLUSIVE: "inconclusive",
            EXIT_NO_AMP: "no amp"}
_PRECEDENCE = (EXIT_OK, EXIT_INCONCLUSIVE, EXIT_FAILED, EXIT_NO_AMP, EXIT_ERROR)
FINDINGS_CHECK = "runtime findings"
REFERENCE_CHECK = "FP32 reference usable"
NO_AMP_REASON = ("no enabled autocast region or GradScaler was seen, so nothing about AMP was compared; "
                 "pass --allow-no-amp to judge the run anyway")


def worst(codes: list[int]) -> int:
    """The exit code that wins when several runs (DDP ranks) are judged together."""
    return max(codes, key=_PRECEDENCE.index, default=EXIT_OK)


def decide(result: Any, amp: Any, ref: Any) -> tuple[int, str]:
    if amp is None:
        return EXIT_ERROR, result.message or "the AMP run did not start"
    if amp.needs_gpu:
        return EXIT_ERROR, (
            f"this script puts tensors on CUDA{_where(amp)} and this machine has no CUDA GPU: "
            "run verify on a GPU machine, or place tensors with a device variable"
        )
    stopped = _stopped_by_verify_or_user(amp, "the AMP run")
    if stopped:
        return EXIT_ERROR, stopped
    if ref is not None:
        stopped = _stopped_by_verify_or_user(ref, "the FP32 reference run")
        if stopped:
            return EXIT_ERROR, stopped
    crit = result.criteria
    result.checks = evaluate(crit, amp, ref)
    if crit.fail_on_findings:
        result.checks.append(findings_check(amp.findings))
    if crit.eval_spec:
        from .decisions import compare

        a_eval, r_eval = amp.evaluation, ref.evaluation if ref is not None else None
        result.evaluation, eval_checks = compare(crit, a_eval, r_eval)
        result.checks += eval_checks
        same = (a_eval or {}).get("error")
        if same and ref is not None and same == (r_eval or {}).get("error") and amp.status != "error":
            return EXIT_ERROR, f"{same}, in both runs"
    ref_broken = ref is not None and ref.status == "error"
    if ref_broken and amp.status == "error" and amp.error == ref.error:
        return EXIT_ERROR, f"{_failure(ref)}, with and without AMP"
    if ref_broken:
        # An FP32 run that breaks is no reference: it cannot fail the AMP run, nor let it pass.
        return EXIT_INCONCLUSIVE, (
            f"the FP32 reference itself failed after {_steps(len(ref.steps))}: {_failure(ref)}: "
            "fix the script before comparing precisions"
        )
    if amp.status == "error" and ref is None and not amp.findings:
        return EXIT_ERROR, _failure(amp)
    if not getattr(amp, "amp_seen", True) and not crit.allow_no_amp:
        return EXIT_NO_AMP, NO_AMP_REASON
    unusable = next((c for c in result.checks if c.name == REFERENCE_CHECK and not c.ok), None)
    if unusable is not None:
        # an FP32 run that is wrong is no reference: nothing here can fail the AMP run but a finding
        if any(c.name == FINDINGS_CHECK and not c.ok for c in result.checks):
            return EXIT_FAILED, f"{FINDINGS_CHECK} (and {unusable.detail.split(':')[0]})"
        return EXIT_INCONCLUSIVE, unusable.detail
    failed = [c for c in result.checks if not c.ok]
    if any(not c.inconclusive and c.measured for c in failed):
        return EXIT_FAILED, ""
    unmeasured = [c for c in failed if not c.measured]
    if unmeasured and not any(c.inconclusive for c in failed):
        return EXIT_INCONCLUSIVE, "; ".join(f"{c.name} not measured: {c.detail}" for c in unmeasured)
    if failed:
        return EXIT_INCONCLUSIVE, ""
    return EXIT_OK, ""


def findings_check(findings: list[Any]) -> Check:
    """``--fail-on-findings``: a runtime finding fails the run."""
    if not findings:
        return Check(FINDINGS_CHECK, True, "none")
    return Check(FINDINGS_CHECK, False, findings_text(findings))


def findings_text(findings: list[Any]) -> str:
    """``AMP003 at train.py:107, AMP002 at train.py:90``."""
    return ", ".join(f"{f.code} at {short_path(f.filename)}:{f.location.row}" for f in findings)


def _stopped_by_verify_or_user(run: Any, which: str) -> str:
    if getattr(run, "cannot_redirect", False):
        return run.error
    if run.timed_out:
        return f"{which} {run.error.removeprefix('the run ')}; raise --timeout if the script is just slow"
    if run.interrupted:
        return f"{run.error}{_where(run)}; verify judges only runs the script does not interrupt itself"
    return ""


def _steps(count: int) -> str:
    return f"{count} step" if count == 1 else f"{count} steps"


def _failure(run: Any) -> str:
    error = run.error or "unknown error"
    text = error if error.startswith("the ") else f"the script raised {error}"
    return text + _where(run)


def _where(run: Any) -> str:
    if not run.traceback:
        return ""
    head = run.traceback[-1].split(" in ")[0]
    path, _, line = head.rpartition(":")
    return f" ({short_path(path)}:{line})"


def judge(result: Any, amp: Any, ref: Any) -> Any:
    """Fill ``result`` (a ``VerifyResult``) with the verdict on the two runs, its warnings and notes."""
    result.checks = []
    result.amp, result.reference = amp, ref
    result.exit_code, result.message = decide(result, amp, ref)
    if amp is not None and result.exit_code != EXIT_ERROR:
        from .advice import notes, warnings

        result.warnings, result.notes = warnings(result), notes(result)
    return result
