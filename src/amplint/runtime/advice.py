"""What a reader of the verdict must know about how far it goes: warnings and notes.

Warnings say the comparison may not mean what the verdict suggests (nothing AMP-related ran,
the ranks never formed a process group); notes say what verify did that affects the numbers.
"""

from __future__ import annotations

from typing import Any


def warnings(result: Any) -> list[str]:
    out = []
    amp = result.amp
    if not amp.amp_seen:
        out.append(
            "no enabled autocast region or GradScaler was seen in the AMP run: it ran in full "
            "precision like the reference, so nothing about AMP was compared"
        )
    if result.nproc_per_node > 1 and not amp.process_group_seen:
        out.append(
            f"--nproc-per-node {result.nproc_per_node} was asked for, but the script never "
            "initialised a process group: each rank trained alone, nothing was data-parallel"
        )
    return out


def notes(result: Any) -> list[str]:
    out = []
    amp, ref = result.amp, result.reference
    if result.device == "cpu" and "float16" in amp.autocast_dtypes:
        out.append(_fp16_on_cpu_cost(amp, ref))
    saved = max(amp.checkpoints_redirected, ref.checkpoints_redirected if ref else 0)
    if saved:
        out.append(
            f"the script wrote {saved} file(s) per run (checkpoints, logs) into a temporary directory "
            "of verify's instead of where it asked, removed afterwards; its own files were not touched"
        )
    return out


def _fp16_on_cpu_cost(amp: Any, ref: Any) -> str:
    text = (
        "float16 autocast ran on the CPU (CUDA code is remapped there), where float16 is mostly "
        "emulated: speed and memory here say nothing about a GPU"
    )
    amp_t, ref_t = _step_time(amp), _step_time(ref)
    if amp_t and ref_t:
        text += f"; measured, the AMP run took {amp_t / ref_t:.1f}x the FP32 reference's time per step"
    return text


def _step_time(run: Any) -> float | None:
    if run is None or len(run.steps) < 2:
        return None
    timed = run.steps[min(5, len(run.steps) // 4):]
    wall = sum(s.wall_s for s in timed)
    return wall / len(timed) if timed and wall > 0 else None

