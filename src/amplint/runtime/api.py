"""``verify()``: criteria first, then the AMP run, then the FP32 reference, then the verdict."""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

from .criteria import Check, Criteria, evaluate
from .runner import RunOutcome, Target

EXIT_OK, EXIT_FAILED, EXIT_ERROR = 0, 1, 2


@dataclass
class VerifyResult:
    target: str
    criteria: Criteria
    device: str
    dtype: str
    amp: RunOutcome | None = None
    reference: RunOutcome | None = None
    checks: list[Check] = field(default_factory=list)
    exit_code: int = EXIT_ERROR
    message: str = ""  # why it could not run (exit 2), one line
    ranks: list[dict[str, Any]] = field(default_factory=list)  # DDP: one entry per rank
    environment: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.exit_code == EXIT_OK

    @property
    def findings(self):
        return self.amp.findings if self.amp else []

    def to_dict(self) -> dict[str, Any]:
        from .report import summary_stats

        return {
            "schema_version": 1,
            "target": self.target,
            "verdict": {EXIT_OK: "trains", EXIT_FAILED: "failed", EXIT_ERROR: "error"}[self.exit_code],
            "exit_code": self.exit_code,
            "message": self.message,
            "device": self.device,
            "dtype": self.dtype,
            "criteria": self.criteria.to_dict(),
            "checks": [c.to_dict() for c in self.checks],
            "findings": [f.to_dict() for f in self.findings],
            "stats": summary_stats(self),
            "runs": {
                "amp": self.amp.to_dict() if self.amp else None,
                "reference": self.reference.to_dict() if self.reference else None,
            },
            "ranks": self.ranks,
            "environment": self.environment,
        }


def environment() -> dict[str, str]:
    import torch

    try:
        from importlib.metadata import version

        amplint_version = version("amplint")
    except Exception:
        amplint_version = "unknown"
    return {
        "torch": torch.__version__,
        "amplint": amplint_version,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def resolve_device(device: str) -> tuple[str, str | None]:
    """(device, error)."""
    import torch

    has_cuda = torch.cuda.is_available()
    if device == "auto":
        return ("cuda" if has_cuda else "cpu"), None
    if device == "cuda" and not has_cuda:
        return device, "--device cuda was asked for, but torch sees no CUDA device"
    if device not in ("cuda", "cpu"):
        return device, f"unknown --device {device!r} (auto, cuda or cpu)"
    return device, None


def verify(
    script: str | None = None,
    args: list[str] | tuple[str, ...] = (),
    *,
    module: str | None = None,
    steps: int = 50,
    device: str = "auto",
    dtype: str = "auto",
    baseline: str = "fp32",
    rtol: float = 0.1,
    max_skipped_frac: float = 0.1,
    seed: int = 0,
    nproc_per_node: int = 1,
    progress: bool | None = False,
    announce: Callable[[str], None] | None = None,
) -> VerifyResult:
    """Run ``script`` (or ``-m module``) with AMP and against an FP32 reference; judge it.

    Returns a :class:`VerifyResult`; ``exit_code`` is 0 (trains), 1 (criteria failed) or 2
    (could not run). ``announce`` receives the criteria lines before the first run.
    """
    if (script is None) == (module is None):
        raise ValueError("give exactly one of script or module")
    crit = Criteria.make(steps, rtol, max_skipped_frac, baseline)
    target = Target(script=script, module=module, args=tuple(args))
    resolved, err = resolve_device(device)
    result = VerifyResult(target.display, crit, resolved, dtype, environment=environment())
    if err:
        result.message = err
        return result
    if dtype not in ("auto", "float16", "bfloat16"):
        result.message = f"unknown --dtype {dtype!r} (auto, float16 or bfloat16)"
        return result
    if baseline not in ("fp32", "none"):
        result.message = f"unknown --baseline {baseline!r} (fp32 or none)"
        return result
    if script is not None:
        import os

        if not os.path.isfile(script):
            result.message = f"no such script: {script}"
            return result
    if announce:
        announce(f"amplint verify {target.display}: {steps} steps on {resolved}, dtype {dtype}, baseline {baseline}")
        announce("criteria (fixed before the runs):")
        for line in crit.describe():
            announce(f"  - {line}")

    if nproc_per_node > 1:
        from .ddp import run_distributed

        return run_distributed(result, target, steps=steps, seed=seed, nproc=nproc_per_node, progress=progress)

    from .precision import PrecisionPlan
    from .progress import Progress
    from .runner import run_once

    remap = resolved == "cpu"
    forced = None if dtype == "auto" else dtype
    plans = [("amp", PrecisionPlan(remap, remap, forced, False))]
    if baseline == "fp32":
        plans.append(("fp32", PrecisionPlan(remap, remap, None, True)))
    outcomes: dict[str, RunOutcome] = {}
    for mode, plan in plans:
        bar = Progress(mode, steps, sys.stderr.isatty() if progress is None else progress)
        try:
            outcomes[mode] = run_once(target, mode=mode, plan=plan, device=resolved, steps=steps, seed=seed, on_step=bar)
        finally:
            bar.close()
        if outcomes[mode].needs_gpu:
            break
    return judge(result, outcomes.get("amp"), outcomes.get("fp32"))


def judge(result: VerifyResult, amp: RunOutcome | None, ref: RunOutcome | None) -> VerifyResult:
    result.amp, result.reference = amp, ref
    if amp is None:
        result.message = result.message or "the AMP run did not start"
        result.exit_code = EXIT_ERROR
        return result
    if amp.needs_gpu:
        where = f" ({amp.traceback[-1].split(' in ')[0]})" if amp.traceback else ""
        result.message = (
            f"this script puts tensors on CUDA{where} and this machine has no CUDA GPU: "
            "run verify on a GPU machine, or place tensors with a device variable"
        )
        result.exit_code = EXIT_ERROR
        return result
    result.checks = evaluate(result.criteria, amp, ref)
    ref_broken = ref is not None and ref.status == "error"
    if ref_broken:
        # the script fails without AMP too: not something AMP verification can judge
        result.message = f"the FP32 reference run failed: {ref.error}"
        result.exit_code = EXIT_ERROR
    elif amp.status == "error" and ref is None and not amp.findings:
        result.message = f"the script failed: {amp.error}"
        result.exit_code = EXIT_ERROR
    else:
        result.exit_code = EXIT_OK if all(c.ok for c in result.checks) else EXIT_FAILED
    return result
