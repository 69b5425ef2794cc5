"""Acceptance criteria, fixed before any run and judged on the recorded steps (no torch here).

Skipped steps do not move the weights, so the loss of the AMP run after n applied updates is
compared with the reference's loss after n updates; the skips themselves are judged by their own
criterion. Steps skipped before the first applied one are the scaler calibrating down from its
initial scale: expected, reported, and not counted against the skipped-steps budget.

A comparison with the reference is *inconclusive* rather than failed when the reference cannot
decide it: the reference's loss did not decrease by more than its own noise over the steps run,
or the final loss misses the tolerance by less than the reference's noise.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from .telemetry import StepRecord


@dataclass(frozen=True)
class Criteria:
    steps: int
    rtol: float
    max_skipped_frac: float
    tail: int  # k: the final loss is the mean of the last k steps
    min_decrease_frac: float = 0.5
    baseline: str = "fp32"

    @classmethod
    def make(cls, steps: int, rtol: float, max_skipped_frac: float, baseline: str) -> "Criteria":
        return cls(steps, rtol, max_skipped_frac, max(1, min(10, steps // 5)), 0.5, baseline)

    def describe(self) -> list[str]:
        lines = [
            "AMP run completes (no exception, at least one optimizer step)",
            "every recorded loss is finite",
            f"applied updates >= {1 - self.max_skipped_frac:.0%} of the steps after scaler calibration",
        ]
        if self.baseline == "fp32":
            lines += [
                f"final loss (mean of last {self.tail}) <= FP32 reference x (1 + {self.rtol:g})",
                f"loss decrease >= {self.min_decrease_frac:g} x the FP32 reference's decrease",
                "inconclusive (not failed) where the reference cannot decide: it does not decrease "
                "by more than its own noise, or its noise exceeds the tolerance",
            ]
        else:
            lines.append(f"final loss (mean of last {self.tail}) below the first loss")
        return lines

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    inconclusive: bool = False  # not ok, but the reference cannot tell AMP's fault from noise

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
) -> dict[str, float | None]:
    """first/final loss of both runs; the reference is read at the AMP run's applied-update count."""
    amp_pts = [s for s in amp if s.loss is not None]
    out: dict[str, float | None] = {
        "amp_first": amp_pts[0].loss if amp_pts else None,
        "amp_final": _mean([s.loss for s in amp_pts[-crit.tail:]]) if amp_pts else None,
        "ref_first": None,
        "ref_final": None,
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
        out["ref_final"] = _mean(aligned[-crit.tail:]) if aligned else None
    return out


def evaluate(crit: Criteria, amp: Any, ref: Any | None) -> list[Check]:
    """``amp``/``ref`` are RunOutcome objects (duck-typed: ``status``, ``steps``, ``error``)."""
    checks: list[Check] = []
    steps: list[StepRecord] = amp.steps
    completed = amp.status in ("stopped", "completed") and len(steps) > 0
    if amp.status == "error":
        detail = f"raised {amp.error}"
    elif not steps:
        detail = "no optimizer step was observed"
    else:
        detail = f"{len(steps)} steps ({'stopped at --steps' if amp.status == 'stopped' else 'script ended'})"
    checks.append(Check("completes", completed, detail))

    losses = [s.loss for s in steps if s.loss is not None]
    bad = [s.index for s in steps if s.nonfinite_loss]
    if not losses:
        checks.append(Check("finite loss", False, "no loss was observed (no backward on a scalar)"))
    else:
        checks.append(Check("finite loss", not bad, f"non-finite at steps {bad[:5]}" if bad else "all finite"))

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
        if a0 is None:
            checks.append(Check("final loss vs FP32", False, "the AMP run recorded no loss"))
        elif ref is None or ref.status == "error" or r0 is None or r1 is None:
            why = ref.error if ref is not None and ref.error else "no reference losses"
            checks.append(Check("final loss vs FP32", False, f"reference unusable: {why}"))
        elif a1 is None or a0 is None or not math.isfinite(a1):
            checks.append(Check("final loss vs FP32", False, f"AMP final loss {a1}"))
            checks.append(Check("loss decrease", False, "AMP final loss missing or non-finite"))
        else:
            checks += _compare(crit, a0, a1, r0, r1, reference_noise(crit, ref.steps))
    else:
        if a0 is None or a1 is None or not math.isfinite(a1):
            checks.append(Check("loss decrease", False, f"AMP final loss {a1}"))
        else:
            checks.append(Check("loss decrease", a1 < a0, f"{a0:.4g} -> {a1:.4g}"))
    return checks


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
