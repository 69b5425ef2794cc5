"""Run a user's script in this process, like ``python SCRIPT`` / ``python -m MODULE``, once.

Seeds are set before the run so the AMP run and the FP32 reference start from the same state;
``sys.argv``/``sys.path`` are set the way the interpreter sets them and restored afterwards, as is
the working directory. With a ``checkpoint_root``, the script's writes go there instead of over
the user's files (see ``checkpoints``), and one that cannot be redirected ends the run as one
verify cannot judge. verify calls this in a fresh process per run (see ``worker``), so nothing the
script leaves behind in modules or the working directory reaches the other run.
"""

from __future__ import annotations

import os
import random
import runpy
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

from amplint.model import Finding

from .checkpoints import CheckpointRedirect
from .findings import report_dict
from .instrument import Instrumentation, StepRecord, StopRun
from .overlay import CannotRedirect
from .patching import Patcher
from .precision import PrecisionPlan, install


@dataclass(frozen=True)
class Target:
    script: str | None = None
    module: str | None = None
    args: tuple[str, ...] = ()

    @property
    def display(self) -> str:
        return self.script if self.script else f"-m {self.module}"


@dataclass
class RunOutcome:
    mode: str  # "amp" | "fp32"
    status: str  # "stopped" (after N steps) | "completed" (natural end) | "error"
    steps: list[StepRecord] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    error: str | None = None  # one line
    traceback: list[str] = field(default_factory=list)  # the user's frames, innermost last
    needs_gpu: bool = False
    scalers_constructed: int = 0
    autocast_dtypes: list[str] = field(default_factory=list)
    device: str = "cpu"
    device_name: str = ""
    peak_memory_bytes: int | None = None
    peak_memory_kind: str = ""
    wall_s: float = 0.0
    interrupted: bool = False  # the script raised KeyboardInterrupt itself
    timed_out: bool = False  # stopped by --timeout
    process_group_seen: bool = False  # the script initialised torch.distributed
    amp_seen: bool = False  # an enabled autocast region or GradScaler was used
    checkpoints_redirected: int = 0  # files the script wrote into verify's directory instead
    cannot_redirect: bool = False  # the script wrote in a way verify could not redirect (refused)
    evaluation: dict[str, Any] | None = None  # --eval: the outputs on the trained model, or why none

    def to_dict(self) -> dict[str, Any]:
        """The report's form of the run (findings in the report's JSON shape)."""
        d = self.to_wire()
        d["findings"] = [report_dict(f) for f in self.findings]
        return d

    def to_wire(self) -> dict[str, Any]:
        """Everything, for the trip from the process that ran the script back to the report."""
        d = dict(self.__dict__)
        d["steps"] = [s.to_dict() for s in self.steps]
        d["findings"] = [f.to_dict() for f in self.findings]
        return d

    @classmethod
    def from_wire(cls, d: dict[str, Any]) -> "RunOutcome":
        d = dict(d)
        d["steps"] = [StepRecord(**s) for s in d.get("steps", [])]
        d["findings"] = [Finding.from_dict(f) for f in d.get("findings", [])]
        return cls(**d)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed)
    except ImportError:
        pass
    import torch

    torch.manual_seed(seed)  # also seeds every CUDA device


_CUDA_MISSING = (
    "Torch not compiled with CUDA enabled",
    "Found no NVIDIA driver",
    "No CUDA GPUs are available",
    "CUDA driver initialization failed",
    "Attempting to deserialize object on a CUDA device",
)


def run_once(
    target: Target,
    *,
    mode: str,
    plan: PrecisionPlan,
    device: str,
    steps: int | None,
    seed: int,
    on_step: Callable[[int, dict], None] | None = None,
    checkpoint_root: str | None = None,
    verify_dir: str | None = None,
    evaluate: str | None = None,
) -> RunOutcome:
    import torch

    from .evaluation import Evaluator

    seed_everything(seed)
    redirect = CheckpointRedirect(checkpoint_root, verify_dir) if checkpoint_root else None
    evaluator = Evaluator(evaluate, target.script, target.module) if evaluate else None
    inst = Instrumentation(max_steps=steps, on_step=on_step, redirect=redirect, evaluator=evaluator)
    outcome = RunOutcome(mode=mode, status="completed", device=device)
    outcome.device_name = _device_name(torch, device)
    _reset_peak_memory(torch, device)

    saved_argv, saved_path, saved_cwd = sys.argv[:], sys.path[:], os.getcwd()
    patcher = Patcher()
    started = time.perf_counter()
    try:
        install(patcher, plan)
        inst.install(patcher)
        if redirect is not None:
            redirect.install(patcher)  # last: from here on, every file write goes through it
        if target.script:
            path = os.path.abspath(target.script)
            sys.argv = [target.script, *target.args]
            sys.path.insert(0, os.path.dirname(path))
            main_globals = runpy.run_path(path, run_name="__main__")
        else:
            sys.argv = [target.module or "", *target.args]
            sys.path.insert(0, os.getcwd())
            main_globals = runpy.run_module(target.module or "", run_name="__main__", alter_sys=True)
        if evaluator is not None:  # the script ended before --steps: its model, if still reachable
            evaluator.at_end(len(inst.telemetry.raw_steps), main_globals)
    except StopRun:
        outcome.status = "stopped"
    except CannotRedirect:
        pass  # recorded by the redirect, reported below whatever the script did with it
    except SystemExit as exc:
        if exc.code not in (None, 0):
            outcome.status = "error"
            outcome.error = f"the script exited with status {exc.code}"
    except KeyboardInterrupt as exc:
        # raised by the script itself: a real Ctrl-C stops verify in the launching process
        outcome.status = "error"
        outcome.interrupted = True
        outcome.error = "the script raised KeyboardInterrupt"
        outcome.traceback = _user_traceback(exc)
    except BaseException as exc:  # the user's failure is a result to report, not our crash
        outcome.status = "error"
        outcome.error = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        outcome.traceback = _user_traceback(exc)
        outcome.needs_gpu = any(m in str(exc) for m in _CUDA_MISSING) and not torch.cuda.is_available()
    finally:
        patcher.undo()
        sys.argv, sys.path[:] = saved_argv, saved_path
        _leave_clean_state(torch, saved_cwd)
    outcome.wall_s = time.perf_counter() - started
    outcome.steps = inst.steps()
    outcome.findings = inst.finding_list()
    outcome.scalers_constructed = inst.scalers_constructed
    outcome.autocast_dtypes = sorted(inst.autocast_dtypes)
    outcome.process_group_seen = inst.state.process_group_seen
    outcome.amp_seen = inst.state.amp_used
    outcome.checkpoints_redirected = redirect.count if redirect else 0
    if evaluator is not None:
        outcome.evaluation = evaluator.result or {
            "error": f"not evaluated: the run ended before it ({outcome.error or 'no optimizer step'})", "at_step": None}
    if redirect is not None and redirect.refused:
        _cannot_judge(outcome, *redirect.refused[0])
    outcome.peak_memory_bytes, outcome.peak_memory_kind = _peak_memory(torch, device)
    return outcome


def _user_traceback(exc: BaseException) -> list[str]:
    import torch

    torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
    own_dir = os.path.dirname(os.path.abspath(__file__))
    lines = []
    for fs in traceback.extract_tb(exc.__traceback__):
        if fs.filename.startswith((torch_dir, own_dir, "<frozen")) or fs.filename.endswith("runpy.py"):
            continue
        lines.append(f"{fs.filename}:{fs.lineno} in {fs.name}: {(fs.line or '').strip()}")
    return lines[-5:]


def _cannot_judge(outcome: RunOutcome, path: str, how: str, where: str) -> None:
    outcome.status = "error"
    outcome.cannot_redirect = True
    outcome.error = (f"verify cannot judge: the script writes {path} in a way verify cannot redirect "
                     f"({how}, at {where}); verify refused the write, the file is as it was")
    outcome.traceback = []


def _leave_clean_state(torch, cwd: str) -> None:
    # a run stopped inside the user's loop may leave grad mode or autocast caches behind, or
    # (in-process) a working directory inside verify's soon-removed directory
    try:
        os.chdir(cwd)
    except OSError:
        pass
    torch.set_grad_enabled(True)
    try:
        torch.clear_autocast_cache()
    except Exception:
        pass
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
    except Exception:
        pass


def _device_name(torch, device: str) -> str:
    if device == "cuda" and torch.cuda.is_available():
        return torch.cuda.get_device_name()
    import platform

    return platform.processor() or platform.machine() or "cpu"


def _reset_peak_memory(torch, device: str) -> None:
    if device == "cuda" and torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
        return
    try:
        # "5" resets the kernel's peak-RSS counter (VmHWM), so the reference run measures its own peak
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def _peak_memory(torch, device: str) -> tuple[int | None, str]:
    if device == "cuda" and torch.cuda.is_available():
        return int(torch.cuda.max_memory_allocated()), "cuda max_memory_allocated"
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024, "peak RSS"
    except OSError:
        pass
    try:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024, "peak RSS (process lifetime)"
    except Exception:
        return None, ""
