"""``verify()``: criteria first, then the AMP run, then the FP32 reference, then the verdict."""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

from .criteria import Check, Criteria
from .runner import RunOutcome, Target
from .verdict import EXIT_ERROR, EXIT_OK, VERDICTS, judge

DEFAULT_TIMEOUT_S = 600.0


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
    message: str = ""  # the reason, one line: why it could not run (2), is inconclusive (3) or compared nothing (4)
    ranks: list[dict[str, Any]] = field(default_factory=list)  # DDP: one entry per rank
    environment: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # the comparison may not mean what it says
    notes: list[str] = field(default_factory=list)  # what verify did that the user should know
    nproc_per_node: int = 1
    evaluation: dict[str, Any] | None = None  # --eval: the comparison of the two runs' outputs

    @property
    def ok(self) -> bool:
        return self.exit_code == EXIT_OK

    @property
    def findings(self):
        return self.amp.findings if self.amp else []

    def to_dict(self) -> dict[str, Any]:
        from .findings import report_dict
        from .report import summary_stats

        return {
            "schema_version": 1,
            "target": self.target,
            "verdict": VERDICTS[self.exit_code],
            "exit_code": self.exit_code,
            "message": self.message,
            "device": self.device,
            "dtype": self.dtype,
            "criteria": self.criteria.to_dict(),
            "checks": [c.to_dict() for c in self.checks],
            "findings": [report_dict(f) for f in self.findings],
            "stats": summary_stats(self),
            "runs": {
                "amp": self.amp.to_dict() if self.amp else None,
                "reference": self.reference.to_dict() if self.reference else None,
            },
            "evaluation": self.evaluation,
            "ranks": self.ranks,
            "warnings": self.warnings,
            "notes": self.notes,
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
    timeout: float = DEFAULT_TIMEOUT_S,
    allow_no_amp: bool = False,
    fail_on_findings: bool = False,
    evaluate: str | None = None,
    eval_atol: float = 1e-3,
    eval_rtol: float = 1e-2,
    eval_threshold: float | None = None,
    eval_max_changed_frac: float = 0.0,
    isolate: bool = True,
    progress: bool | None = False,
    announce: Callable[[str], None] | None = None,
) -> VerifyResult:
    """Run ``script`` (or ``-m module``) with AMP and against an FP32 reference; judge it.

    This runs the script's code, each run in its own process; ``timeout`` (seconds, 0 for none)
    bounds each run. ``isolate=False`` runs both in this process instead (see
    :func:`amplint.runtime.launch.run_sides_in_process`). Returns a :class:`VerifyResult`;
    ``exit_code`` is 0 (trains), 1 (criteria failed), 2 (could not run), 3 (inconclusive:
    the reference cannot decide, or is itself non-finite or diverging) or 4 (no AMP: no enabled
    autocast region or GradScaler was seen; ``allow_no_amp=True`` judges such a run anyway).
    ``fail_on_findings=True`` makes a runtime finding fail the run. ``evaluate="module:function"``
    (or ``"path.py:function"``) is called on each run's trained model after its last step and
    must return the outputs for a fixed batch; they are compared with ``eval_atol``/``eval_rtol``,
    then the decisions made from them (argmax, or ``score > eval_threshold``), of which at most
    ``eval_max_changed_frac`` may change.
    ``announce`` receives the criteria lines before the first run.
    """
    if (script is None) == (module is None):
        raise ValueError("give exactly one of script or module")
    crit = Criteria.make(steps, rtol, max_skipped_frac, baseline, allow_no_amp=allow_no_amp,
                         fail_on_findings=fail_on_findings, eval_spec=evaluate, eval_atol=eval_atol,
                         eval_rtol=eval_rtol, eval_threshold=eval_threshold,
                         eval_max_changed_frac=eval_max_changed_frac)
    target = Target(script=script, module=module, args=tuple(args))
    resolved, err = resolve_device(device)
    result = VerifyResult(target.display, crit, resolved, dtype, environment=environment(),
                          nproc_per_node=nproc_per_node)
    if err:
        result.message = err
        return result
    if dtype not in ("auto", "float16", "bfloat16"):
        result.message = f"unknown --dtype {dtype!r} (auto, float16 or bfloat16)"
        return result
    if baseline not in ("fp32", "none"):
        result.message = f"unknown --baseline {baseline!r} (fp32 or none)"
        return result
    if timeout < 0:
        result.message = f"--timeout must be 0 (none) or a number of seconds, not {timeout:g}"
        return result
    if script is not None:
        import os

        if not os.path.isfile(script):
            result.message = f"no such script: {script}"
            return result
    if evaluate is not None:
        problem = _eval_problem(evaluate, eval_atol, eval_rtol, eval_max_changed_frac)
        if problem:
            result.message = problem
            return result
    if announce:
        announce(f"amplint verify {target.display}: {steps} steps on {resolved}, dtype {dtype}, baseline {baseline}")
        announce("criteria (fixed before the runs):")
        for line in crit.describe():
            announce(f"  - {line}")

    if nproc_per_node > 1:
        from .ddp import run_distributed

        return run_distributed(result, target, steps=steps, seed=seed, nproc=nproc_per_node, progress=progress,
                               timeout=timeout)

    from .launch import run_sides, run_sides_in_process
    from .precision import PrecisionPlan

    remap = resolved == "cpu"
    forced = None if dtype == "auto" else dtype
    sides = [("amp", PrecisionPlan(remap, remap, forced, False))]
    if baseline == "fp32":
        sides.append(("fp32", PrecisionPlan(remap, remap, None, True)))
    show = sys.stderr.isatty() if progress is None else progress
    if isolate:
        outcomes = run_sides(target, sides, device=resolved, steps=steps, seed=seed, timeout=timeout, progress=show,
                             evaluate=evaluate)
    else:
        outcomes = run_sides_in_process(target, sides, device=resolved, steps=steps, seed=seed, progress=show,
                                        evaluate=evaluate)
    return judge(result, outcomes.get("amp"), outcomes.get("fp32"))


def _eval_problem(spec: str, atol: float, rtol: float, max_changed: float) -> str:
    """Why ``--eval`` cannot be used as given, found before the runs ("" when it can)."""
    import os

    from .evaluation import split_spec

    try:
        where, _ = split_spec(spec)
    except ValueError as exc:
        return str(exc)
    if where.endswith(".py") and not os.path.isfile(where):
        return f"--eval {spec}: no such file {where}"
    if min(atol, rtol) < 0 or not 0 <= max_changed <= 1:
        return "--eval-atol and --eval-rtol must be >= 0, --eval-max-changed-frac between 0 and 1"
    return ""
