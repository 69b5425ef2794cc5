"""The human report (table + findings + verdict) and the JSON document for CI."""

from __future__ import annotations

import json
import math
from typing import Any

from .criteria import calibration_skips, loss_summary
from .findings import format_finding

# the words of the verdict, shared by the text report and the plot's title
VERDICT_WORDS = {0: "TRAINS", 1: "FAILED", 2: "ERROR", 3: "INCONCLUSIVE"}


def _warmup(n: int) -> int:
    return min(5, n // 4)


def run_stats(run: Any) -> dict[str, Any]:
    steps = run.steps
    n = len(steps)
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
        out["amp"] = run_stats(result.amp)
    if result.reference is not None:
        out["reference"] = run_stats(result.reference)
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
            ("loss final (mean last k)", _num(loss["amp_final"]), _num(loss["ref_final"])),
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
            mark = "ok" if c.ok else "inconclusive" if c.inconclusive else "FAIL"
            lines.append(f"  [{mark}] {c.name}: {c.detail}")
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


def verdict_word(result: Any) -> str:
    return VERDICT_WORDS[result.exit_code]


def verdict_line(result: Any) -> str:
    word = verdict_word(result)
    if result.exit_code == 0:
        return f"verdict: {word} - {result.target} passed every criterion"
    if result.exit_code == 1:
        failed = ", ".join(c.name for c in result.checks if not c.ok and not c.inconclusive) or ", ".join(
            f"rank {r['rank']}'s {' and '.join(r['failed_checks'])}" for r in result.ranks if r["failed_checks"]
        )
        codes = sorted({f.code for f in result.findings})
        extra = f"; findings {', '.join(codes)}" if codes else ""
        return f"verdict: {word} - {failed}{extra}"
    if result.exit_code == 3:
        undecided = ", ".join(c.name for c in result.checks if c.inconclusive) or ", ".join(
            f"rank {r['rank']}'s {' and '.join(r['inconclusive_checks'])}" for r in result.ranks if r["inconclusive_checks"]
        )
        return f"verdict: {word} - the FP32 reference cannot decide {undecided}; run more --steps or raise --rtol"
    return f"verdict: {word} - could not verify: {result.message}"


def write_json(result: Any, path: str) -> None:
    """Raises OSError with the reason when ``path`` cannot be written."""
    text = json.dumps(result.to_dict(), indent=2, allow_nan=True, default=str)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text + "\n")
