"""The human report (table + findings + verdict) and the JSON document for CI."""

from __future__ import annotations

import json
import math
from typing import Any

from .criteria import calibration_skips, finite_mean, first_nonfinite, loss_summary
from .findings import format_finding

# the words of the verdict, shared by the text report and the plot's title
VERDICT_WORDS = {0: "TRAINS", 1: "FAILED", 2: "ERROR", 3: "INCONCLUSIVE", 4: "NO AMP"}


def _warmup(n: int) -> int:
    return min(5, n // 4)


def run_stats(run: Any, tail: int) -> dict[str, Any]:
    """What one run measured; ``final_loss`` is the mean of the finite losses among its own last
    ``tail`` steps (``final_loss_finite`` of them were finite)."""
    steps = run.steps
    n = len(steps)
    final, final_n = finite_mean([s.loss for s in steps if s.loss is not None][-tail:])
    scales = [s.scale_after if s.scale_after is not None else s.scale_before for s in steps]
    scales = [x for x in scales if x is not None]
    w = _warmup(n)
    timed = steps[w:]
    wall = sum(s.wall_s for s in timed)
    samples = [s.samples for s in timed]
    return {
        "steps": n,
        "applied": sum(s.applied for s in steps),
        "skipped": sum(not s.applied for s in steps),
        "calibration_skips": calibration_skips(steps),
        "first_nonfinite_step": first_nonfinite(steps),
        "final_loss": final,
        "final_loss_finite": final_n,
        "scale_min": min(scales) if scales else None,
        "scale_max": max(scales) if scales else None,
        "scale_final": scales[-1] if scales else None,
        "warmup_steps": w,
        "steps_per_s": (len(timed) / wall) if timed and wall > 0 else None,
        "samples_per_s": (sum(samples) / wall) if timed and wall > 0 and None not in samples else None,
        "peak_memory_bytes": run.peak_memory_bytes,
        "peak_memory_kind": run.peak_memory_kind,
        "autocast_dtypes": run.autocast_dtypes,
        "scalers_constructed": run.scalers_constructed,
        "status": run.status,
    }


def summary_stats(result: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if result.amp is not None:
        out["amp"] = run_stats(result.amp, result.criteria.tail)
    if result.reference is not None:
        out["reference"] = run_stats(result.reference, result.criteria.tail)
    if result.amp is not None:
        out["loss"] = loss_summary(
            result.criteria, result.amp.steps, result.reference.steps if result.reference else None
        )
    return out


def _num(x: Any, fmt: str = ".4g") -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return format(x, fmt)


def _mem(b: int | None) -> str:
    return "-" if b is None else f"{b / 2**20:.0f} MiB"


def format_text(result: Any) -> str:
    if result.exit_code == 2:
        return verdict_line(result)  # nothing to judge: the reason alone, on one line
    lines: list[str] = []
    env = result.environment
    stats = summary_stats(result)
    amp, ref = stats.get("amp"), stats.get("reference")
    run = result.amp
    if run is not None:
        lines.append(
            f"device {result.device} ({run.device_name}), autocast dtype "
            f"{','.join(run.autocast_dtypes) or 'none seen'}, torch {env.get('torch')}, amplint {env.get('amplint')}"
        )
    if amp is not None:
        loss = stats["loss"]
        rows = [
            ("steps (applied/skipped)", f"{amp['steps']} ({amp['applied']}/{amp['skipped']}, {amp['calibration_skips']} calibration)",
             f"{ref['steps']} ({ref['applied']}/{ref['skipped']})" if ref else "-"),
            ("loss scale min/max/final", f"{_num(amp['scale_min'])} / {_num(amp['scale_max'])} / {_num(amp['scale_final'])}", "-"),
            ("loss first", _num(loss["amp_first"]), _num(loss["ref_first"])),
            (f"loss final (mean of last {loss['tail']} finite)", _final(amp, loss["tail"]), _final(ref, loss["tail"]) if ref else "-"),
            ("first non-finite loss", _nonfinite(amp), _nonfinite(ref) if ref else "-"),
            ("steps/s after warm-up", _num(amp["steps_per_s"], ".1f"), _num(ref["steps_per_s"], ".1f") if ref else "-"),
            ("samples/s after warm-up", _num(amp["samples_per_s"], ".0f"), _num(ref["samples_per_s"], ".0f") if ref else "-"),
            (f"peak memory ({amp['peak_memory_kind'] or '?'})", _mem(amp["peak_memory_bytes"]), _mem(ref["peak_memory_bytes"]) if ref else "-"),
            ("GradScalers constructed", str(amp["scalers_constructed"]), str(ref["scalers_constructed"]) if ref else "-"),
        ]
        w0 = max(len(r[0]) for r in rows)
        w1 = max(len(r[1]) for r in rows + [("", "AMP", "")])
        lines.append(f"{'':<{w0}}  {'AMP':<{w1}}  FP32 reference")
        for a, b, c in rows:
            lines.append(f"{a:<{w0}}  {b:<{w1}}  {c}")
    if result.checks:
        lines.append("")
        lines.append("criteria:")
        for c in result.checks:
            mark = "ok" if c.ok else "inconclusive" if c.inconclusive else "not measured" if not c.measured else "FAIL"
            lines.append(f"  [{mark}] {c.name}: {c.detail}")
    evaluation = getattr(result, "evaluation", None)
    if evaluation is not None:
        from .decisions import format_evaluation

        lines.append("")
        lines.extend(format_evaluation(evaluation))
    if run is not None and run.error:
        lines.append("")
        lines.append(f"AMP run raised {run.error}")
        lines.extend(f"    {t}" for t in run.traceback)
    if result.reference is not None and result.reference.error:
        lines.append(f"FP32 reference raised {result.reference.error}")
        lines.extend(f"    {t}" for t in result.reference.traceback)
    lines.append("")
    findings = result.findings
    if findings:
        lines.append(f"runtime findings ({len(findings)}):")
        lines.extend(f"  {format_finding(f)}" for f in findings)
    elif run is not None:
        lines.append("runtime findings: none")
    for r in result.ranks:
        lines.append(f"rank {r['rank']}: {r['verdict']} ({r['steps']} steps, final loss {_num(r['final_loss'])})")
    lines.extend(f"note: {n}" for n in result.notes)
    lines.extend(f"warning: {w}" for w in result.warnings)
    lines.append(verdict_line(result))
    return "\n".join(lines)


def _final(stats: dict[str, Any], tail: int) -> str:
    value, n = stats["final_loss"], stats["final_loss_finite"]
    k = min(tail, stats["steps"])
    if n == 0:
        return "- (none finite)" if stats["steps"] else "-"
    return _num(value) + ("" if n == k else f" ({n} of {k} finite)")


def _nonfinite(stats: dict[str, Any]) -> str:
    step = stats["first_nonfinite_step"]
    return "none" if step is None else f"step {step}"


def verdict_word(result: Any) -> str:
    return VERDICT_WORDS[result.exit_code]


def with_findings(result: Any) -> str:
    """``, with 1 runtime finding: AMP003 at train.py:107`` (empty without findings)."""
    from .verdict import findings_text

    findings = getattr(result, "findings", None) or []  # a bare result (tests, plots of loaded JSON) has none
    if not findings or result.exit_code == 2:
        return ""
    plural = "" if len(findings) == 1 else "s"
    return f", with {len(findings)} runtime finding{plural}: {findings_text(findings)}"


def verdict_reason(result: Any) -> str:
    """The verdict's reason, as the verdict line and the plot's title give it."""
    if result.exit_code == 0:
        return f"{result.target} passed every criterion"
    if result.exit_code == 1:
        if result.message:
            return result.message
        return ", ".join(c.name for c in result.checks if not c.ok and not c.inconclusive and c.measured) or ", ".join(
            f"rank {r['rank']}'s {' and '.join(r['failed_checks'])}" for r in result.ranks if r["failed_checks"]
        )
    if result.exit_code == 3:
        if result.message:
            return result.message
        undecided = ", ".join(c.name for c in result.checks if c.inconclusive) or ", ".join(
            f"rank {r['rank']}'s {' and '.join(r['inconclusive_checks'])}" for r in result.ranks if r["inconclusive_checks"]
        )
        if result.criteria.baseline != "fp32":
            return f"the run's own noise cannot decide {undecided}; run more --steps"
        return f"the FP32 reference cannot decide {undecided}; run more --steps or raise --rtol"
    if result.exit_code == 4:
        return result.message
    return f"could not verify: {result.message}"


def verdict_line(result: Any) -> str:
    word = verdict_word(result)
    findings = with_findings(result)
    return f"verdict: {word}{findings} - {verdict_reason(result)}"


def write_json(result: Any, path: str) -> None:
    """Raises OSError with the reason when ``path`` cannot be written."""
    text = json.dumps(result.to_dict(), indent=2, allow_nan=True, default=str)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text + "\n")
