"""Acceptance criteria, fixed before any run and judged on the recorded steps (no torch here).

Skipped steps do not move the weights, so the loss of the AMP run after n applied updates is
compared with the reference's loss after n updates; the skips themselves are judged by their own
criterion. Steps skipped before the first applied one are the scaler calibrating down from its
initial scale: expected, reported, and not counted against the skipped-steps budget.

A comparison with the reference is *inconclusive* rather than failed when the reference cannot
decide it: the reference's loss did not decrease by more than its own noise over the steps run,
or the final loss misses the tolerance by less than the reference's noise. The reference is
checked before it judges: one whose loss is non-finite or diverges is no reference, and every
comparison with it is inconclusive. A criterion that needs steps is *not measured* (never
"failed" with made-up numbers) when the run stopped before its first step.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass
from typing import Any

from .telemetry import StepRecord

DIVERGE_FACTOR = 10.0  # a reference whose final loss exceeds this multiple of its first diverges


@dataclass(frozen=True)
class Criteria:
    steps: int
    rtol: float
    max_skipped_frac: float
    tail: int  # k: the final loss is the mean of the last k steps
    min_decrease_frac: float = 0.5
    baseline: str = "fp32"
    allow_no_amp: bool = False  # a run with no enabled autocast or GradScaler is judged like any other
    fail_on_findings: bool = False  # a runtime finding fails the run
    diverge_factor: float = DIVERGE_FACTOR
    eval_spec: str | None = None  # --eval module:function (None: no evaluation)
    eval_atol: float = 1e-3
    eval_rtol: float = 1e-2
    eval_threshold: float | None = None  # decisions are score > threshold (else argmax)
    eval_max_changed_frac: float = 0.0

    @classmethod
    def make(cls, steps: int, rtol: float, max_skipped_frac: float, baseline: str, *,
             allow_no_amp: bool = False, fail_on_findings: bool = False, eval_spec: str | None = None,
             eval_atol: float = 1e-3, eval_rtol: float = 1e-2, eval_threshold: float | None = None,
             eval_max_changed_frac: float = 0.0) -> "Criteria":
        return cls(steps, rtol, max_skipped_frac, max(1, min(10, steps // 5)), 0.5, baseline,
                   allow_no_amp, fail_on_findings, DIVERGE_FACTOR, eval_spec, eval_atol, eval_rtol,
                   eval_threshold, eval_max_changed_frac)

    def describe(self) -> list[str]:
        lines = []
        if self.baseline == "fp32":
            lines.append(
                "the FP32 reference is checked first: a non-finite loss, or a final loss above "
                f"{self.diverge_factor:g} x its first, makes every comparison inconclusive (fix the script first)"
            )
        lines += [
            "AMP run completes (no exception, at least one optimizer step)",
            "every recorded loss is finite",
            f"applied updates >= {1 - self.max_skipped_frac:.0%} of the steps after scaler calibration",
        ]
        if self.baseline == "fp32":
            lines += [
                f"final loss (mean of the finite ones of the last {self.tail}) <= FP32 reference x (1 + {self.rtol:g})",
                f"loss decrease >= {self.min_decrease_frac:g} x the FP32 reference's decrease",
                "inconclusive (not failed) where the reference cannot decide: it does not decrease "
                "by more than its own noise, or its noise exceeds the tolerance",
            ]
        else:
            lines.append(
                f"final loss (mean of the finite ones of the last {self.tail}) below the mean of the first "
                f"{self.tail} by more than the run's own noise; inconclusive within it"
            )
        if self.allow_no_amp:
            lines.append("a run with no enabled autocast region or GradScaler is judged too (--allow-no-amp)")
        else:
            lines.append("an enabled autocast region or GradScaler is seen (otherwise: NO AMP)")
        if self.fail_on_findings:
            lines.append("no runtime finding (--fail-on-findings)")
        if self.eval_spec:
            rule = f"score > {self.eval_threshold:g}" if self.eval_threshold is not None else "argmax"
            lines += [
                f"evaluation {self.eval_spec} on the trained model: every AMP output finite",
                f"evaluation outputs within atol {self.eval_atol:g} + rtol {self.eval_rtol:g} x |reference|",
                f"evaluation decisions ({rule}) changed on at most {self.eval_max_changed_frac:.0%} of the inputs",
            ]
        return lines

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    inconclusive: bool = False  # not ok, but the reference cannot tell AMP's fault from noise
    measured: bool = True  # False: the run gave nothing to judge this on (the detail says why)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def calibration_skips(steps: list[StepRecord]) -> int:
    n = 0
    for s in steps:
        if s.applied:
            break
        n += 1
    return n if n < len(steps) else 0  # nothing ever applied: no calibration, all skips count


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def finite_mean(values: list[float | None]) -> tuple[float | None, int]:
    """The mean of the finite values among ``values`` and how many there were."""
    kept = [v for v in values if _finite(v)]
    return _mean(kept), len(kept)


def first_nonfinite(steps: list[StepRecord]) -> int | None:
    return next((s.index for s in steps if s.loss is not None and not math.isfinite(s.loss)), None)


def short_path(path: str) -> str:
    """``path`` relative to the working directory when it is below it, as given otherwise."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if rel.startswith(os.pardir) else rel


def raised_at(run: Any) -> str:
    """Where the run's exception was raised in the user's code: ``train.py:30 (scaler.step(opt))``."""
    tb = getattr(run, "traceback", None) or []
    if not tb:
        return ""
    head, _, rest = tb[-1].partition(" in ")
    path, _, line = head.rpartition(":")
    code = rest.partition(": ")[2]
    return f"{short_path(path)}:{line}" + (f" ({code})" if code else "")


def stopped_before_first_step(run: Any) -> str:
    """Why a run with no recorded step gave nothing to measure, naming the exception and its site."""
    if run.status == "error":
        site = raised_at(run)
        return f"the run stopped before its first step: {run.error}" + (f" at {site}" if site else "")
    return "the script ended before its first optimizer step"


def reference_problem(crit: "Criteria", ref: Any) -> str:
    """Why the reference cannot judge (its loss is non-finite or diverges), or "" when it can."""
    steps = ref.steps
    bad = first_nonfinite(steps)
    if bad is not None:
        return f"the FP32 reference itself is not finite from step {bad}: fix the script before comparing precisions"
    losses = [s.loss for s in steps if _finite(s.loss)]
    if len(losses) >= 2:
        final, _ = finite_mean(losses[-crit.tail:])
        first = losses[0]
        if final is not None and abs(final) > crit.diverge_factor * max(abs(first), 1e-12):
            return (f"the FP32 reference itself diverges (loss {first:.4g} at step 0, {final:.4g} over its last "
                    f"{min(crit.tail, len(losses))} steps): fix the script before comparing precisions")
    return ""


def reference_noise(crit: Criteria, ref: list[StepRecord]) -> float:
    """Standard error of the reference's final loss (a mean of ``tail`` steps).

    Per-step noise is estimated from step-to-step changes (their spread / sqrt 2), which a
    steady downward trend does not inflate. Too few steps to tell: 0.
    """
    losses = [s.loss for s in ref if s.loss is not None and math.isfinite(s.loss)]
    window = losses[-max(2 * crit.tail, 6):]
    diffs = [b - a for a, b in zip(window, window[1:])]
    if len(diffs) < 3:
        return 0.0
    mean = sum(diffs) / len(diffs)
    spread = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1))
    return spread / math.sqrt(2) / math.sqrt(crit.tail)


def loss_summary(
    crit: Criteria, amp: list[StepRecord], ref: list[StepRecord] | None
) -> dict[str, Any]:
    """first/final loss of both runs; the reference is read at the AMP run's applied-update count.

    A final loss is the mean of the finite losses among the last ``tail`` recorded ones;
    ``*_final_n`` says how many were finite (0: none, and the final loss is None).
    """
    amp_pts = [s for s in amp if s.loss is not None]
    amp_final, amp_n = finite_mean([s.loss for s in amp_pts[-crit.tail:]])
    out: dict[str, Any] = {
        "tail": crit.tail,
        "amp_first": amp_pts[0].loss if amp_pts else None,
        "amp_final": amp_final,
        "amp_final_n": amp_n,
        "ref_first": None,
        "ref_final": None,
        "ref_final_n": 0,
    }
    if ref:
        ref_loss = [s.loss for s in ref]
        out["ref_first"] = ref_loss[0] if ref_loss else None
        applied_before = []
        count = 0
        for s in amp:
            applied_before.append(count)
            count += s.applied
        aligned = []
        for s, n in zip(amp, applied_before):
            if s.loss is not None and n < len(ref_loss) and ref_loss[n] is not None:
                aligned.append(ref_loss[n])
        out["ref_final"], out["ref_final_n"] = finite_mean(aligned[-crit.tail:])
    return out


def own_noise(crit: Criteria, steps: list[StepRecord]) -> float:
    """The per-step noise of a run's loss (spread of step-to-step changes / sqrt 2), 0 if too few steps."""
    return reference_noise(crit, steps) * math.sqrt(crit.tail)


def evaluate(crit: Criteria, amp: Any, ref: Any | None) -> list[Check]:
    """``amp``/``ref`` are RunOutcome objects (duck-typed: ``status``, ``steps``, ``error``)."""
    checks: list[Check] = []
    steps: list[StepRecord] = amp.steps
    broken_ref = ""
    if crit.baseline == "fp32" and ref is not None and ref.status != "error":
        broken_ref = reference_problem(crit, ref)
        checks.append(Check("FP32 reference usable", not broken_ref, broken_ref or "finite, and does not diverge",
                            inconclusive=bool(broken_ref)))
    completed = amp.status in ("stopped", "completed") and len(steps) > 0
    if amp.status == "error":
        site = raised_at(amp)
        detail = f"raised {amp.error}" + (f" at {site}" if site else "")
        if steps:
            detail += f" after {len(steps)} step(s)"
    elif not steps:
        detail = "no optimizer step was observed"
    else:
        detail = f"{len(steps)} steps ({'stopped at --steps' if amp.status == 'stopped' else 'script ended'})"
    checks.append(Check("completes", completed, detail))

    if not steps:
        why = stopped_before_first_step(amp)
        names = ["finite loss", "applied updates"]
        names += ["final loss vs FP32", "loss decrease"] if crit.baseline == "fp32" else ["loss decrease"]
        checks += [Check(name, False, why, measured=False) for name in names]
        return checks

    losses = [s.loss for s in steps if s.loss is not None]
    bad = [s.index for s in steps if s.nonfinite_loss]
    if not losses:
        checks.append(Check("finite loss", False, f"no loss was seen in {len(steps)} step(s) "
                            "(neither scaler.scale(loss) nor backward() on a one-element tensor)", measured=False))
    else:
        checks.append(Check("finite loss", not bad, f"non-finite from step {bad[0]} ({len(bad)} of {len(steps)} steps)"
                            if bad else f"all {len(losses)} finite"))

    calib = calibration_skips(steps)
    counted = len(steps) - calib
    applied = sum(s.applied for s in steps)
    need = math.ceil((1 - crit.max_skipped_frac) * counted - 1e-9)
    ok = applied > 0 and applied >= need
    checks.append(
        Check(
            "applied updates",
            ok,
            f"{applied}/{counted} applied after {calib} calibration skip(s) (need >= {need})",
        )
    )

    summ = loss_summary(crit, steps, ref.steps if ref is not None else None)
    a0, a1 = summ["amp_first"], summ["amp_final"]
    if crit.baseline == "fp32":
        r0, r1 = summ["ref_first"], summ["ref_final"]
        if broken_ref:
            why = "not compared: " + broken_ref.split(":")[0]
            checks.append(Check("final loss vs FP32", False, why, inconclusive=True))
            checks.append(Check("loss decrease", False, why, inconclusive=True))
        elif a0 is None:
            why = "the AMP run recorded no loss"
            checks.append(Check("final loss vs FP32", False, why, measured=False))
            checks.append(Check("loss decrease", False, why, measured=False))
        elif ref is None or ref.status == "error" or r0 is None or r1 is None:
            why = ref.error if ref is not None and ref.error else "no reference losses"
            checks.append(Check("final loss vs FP32", False, f"reference unusable: {why}"))
        elif a1 is None:
            why = f"no finite AMP loss in the last {crit.tail} steps"
            checks.append(Check("final loss vs FP32", False, why))
            checks.append(Check("loss decrease", False, why))
        else:
            checks += _compare(crit, a0, a1, r0, r1, reference_noise(crit, ref.steps))
    else:
        checks.append(_own_decrease(crit, steps))
    return checks


def _own_decrease(crit: Criteria, steps: list[StepRecord]) -> Check:
    """``--baseline none``: the mean of the last k finite losses against the mean of the first k,
    with an allowance for the run's own step-to-step noise."""
    losses = [s.loss for s in steps if s.loss is not None]
    if not losses:
        return Check("loss decrease", False, "no loss was seen", measured=False)
    first, n_first = finite_mean(losses[:crit.tail])
    final, n_final = finite_mean(losses[-crit.tail:])
    if first is None or final is None:
        return Check("loss decrease", False, f"no finite loss among the first or the last {crit.tail} steps")
    sigma = own_noise(crit, steps)
    # standard error of the difference of two means of k (nearly independent) noisy steps
    allowance = sigma * math.sqrt(1 / n_first + 1 / n_final)
    dec = first - final
    detail = (f"mean of the first {n_first} {first:.4g} -> mean of the last {n_final} {final:.4g} "
              f"(decrease {dec:.4g}, the run's own noise +/-{allowance:.3g})")
    if dec > allowance:
        return Check("loss decrease", True, detail)
    if allowance > 0 and dec >= -2 * allowance:
        return Check("loss decrease", False, detail + ": within the noise; run more --steps", inconclusive=True)
    return Check("loss decrease", False, detail)


def _compare(crit: Criteria, a0: float, a1: float, r0: float, r1: float, noise: float) -> list[Check]:
    limit = r1 + crit.rtol * abs(r1)
    tolerance = crit.rtol * abs(r1)
    detail = f"{a1:.4g} vs reference {r1:.4g} (limit {limit:.4g})"
    final = Check("final loss vs FP32", a1 <= limit, detail)
    if not final.ok and a1 <= limit + 2 * noise and noise > tolerance:
        final.inconclusive = True
        final.detail += f"; the reference's own noise (+/-{noise:.3g}) exceeds the tolerance ({tolerance:.3g})"
    amp_dec, ref_dec = a0 - a1, r0 - r1
    if ref_dec <= noise:
        decrease = Check(
            "loss decrease", False,
            f"the FP32 reference did not decrease over the steps run ({ref_dec:.4g}, noise {noise:.3g}): "
            f"nothing to compare AMP's decrease ({amp_dec:.4g}) with; run more --steps",
            inconclusive=True,
        )
    else:
        need = crit.min_decrease_frac * ref_dec
        detail = f"{amp_dec:.4g} vs reference {ref_dec:.4g} (need >= {need:.4g})"
        decrease = Check("loss decrease", amp_dec >= need, detail)
        if not decrease.ok and amp_dec >= need - 2 * noise and noise > 0:
            decrease.inconclusive = True
            decrease.detail += f"; within the reference's noise (+/-{noise:.3g})"
    return [final, decrease]
