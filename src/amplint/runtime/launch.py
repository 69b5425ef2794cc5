"""The launching side of a verify run: start the worker, relay its output, collect the outcomes.

The script's own stdout and stderr are relayed line by line to ours, with the progress bar
cleared before each line and redrawn after, so neither garbles the other. Everything the runs
write (results, redirected checkpoints) lives in one directory this module creates and removes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import asdict
from typing import BinaryIO

from .precision import PrecisionPlan
from .process_groups import Terminated
from .progress import ProgressBoard
from .runner import RunOutcome, Target

# headroom over the per-run timeouts for starting Python and importing torch
_START_ALLOWANCE_S = 120.0


class Interrupted(Exception):
    """Ctrl-C while a run was in progress; the runs have been stopped."""


def run_sides(
    target: Target,
    sides: list[tuple[str, PrecisionPlan]],
    *,
    device: str,
    steps: int,
    seed: int,
    timeout: float,
    progress: bool,
    evaluate: str | None = None,
) -> dict[str, RunOutcome]:
    workdir = tempfile.mkdtemp(prefix="amplint-verify-")
    try:
        return _run_in(workdir, target, sides, device=device, steps=steps, seed=seed, timeout=timeout,
                       progress=progress, evaluate=evaluate)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)  # ours alone: made by mkdtemp above


def run_sides_in_process(
    target: Target, sides: list[tuple[str, PrecisionPlan]], *, device: str, steps: int, seed: int, progress: bool,
    evaluate: str | None = None,
) -> dict[str, RunOutcome]:
    """Both runs in this process, one after the other: faster, and a debugger can follow the
    script, but module state the first run leaves behind is seen by the second, and there is
    no timeout. For tests of the instrumentation and for debugging."""
    from .progress import Progress
    from .runner import run_once

    workdir = tempfile.mkdtemp(prefix="amplint-verify-")
    outcomes: dict[str, RunOutcome] = {}
    try:
        for mode, plan in sides:
            bar = Progress(mode, steps, progress)
            try:
                outcomes[mode] = run_once(target, mode=mode, plan=plan, device=device, steps=steps, seed=seed,
                                          on_step=bar, checkpoint_root=os.path.join(workdir, mode),
                                          verify_dir=workdir, evaluate=evaluate)
            finally:
                bar.close()
            if outcomes[mode].needs_gpu:
                break
    finally:
        shutil.rmtree(workdir, ignore_errors=True)  # ours alone: made by mkdtemp above
    return outcomes


def _run_in(workdir: str, target: Target, sides, *, device, steps, seed, timeout, progress,
            evaluate=None) -> dict[str, RunOutcome]:
    results = os.path.join(workdir, "results")
    os.mkdir(results)
    read_fd, write_fd = os.pipe()
    request = {
        "target": {
            "script": os.path.abspath(target.script) if target.script else None,
            "module": target.module,
            "args": list(target.args),
        },
        "sides": [{"mode": mode, "plan": asdict(plan)} for mode, plan in sides],
        "device": device,
        "steps": steps,
        "seed": seed,
        "timeout": timeout,
        "results": results,
        "checkpoints": os.path.join(workdir, "checkpoints"),
        "progress_fd": write_fd,
        "eval": evaluate,
    }
    req_path = os.path.join(workdir, "request.json")
    with open(req_path, "w", encoding="utf-8") as fh:
        json.dump(request, fh)

    board = ProgressBoard({mode: steps for mode, _ in sides}, progress)
    cmd = [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []), "-m", "amplint.runtime.worker", req_path]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(write_fd,),
                            start_new_session=True, env=_worker_env())
    os.close(write_fd)
    threads = [
        threading.Thread(target=_relay, args=(proc.stdout, board, "stdout"), daemon=True),
        threading.Thread(target=_relay, args=(proc.stderr, board, "stderr"), daemon=True),
        threading.Thread(target=_read_progress, args=(read_fd, board), daemon=True),
    ]
    for t in threads:
        t.start()
    overall = timeout * len(sides) + _START_ALLOWANCE_S if timeout else None
    try:
        proc.wait(timeout=overall)
    except KeyboardInterrupt:
        _stop(proc)
        raise Interrupted() from None
    except Terminated:
        _stop(proc)
        raise
    except subprocess.TimeoutExpired:
        _stop(proc)
    for t in threads:
        t.join(timeout=5)
    board.close()
    return _collect(results, sides, device, proc.returncode)


def _collect(results: str, sides, device: str, returncode: int | None) -> dict[str, RunOutcome]:
    outcomes: dict[str, RunOutcome] = {}
    for mode, _ in sides:
        path = os.path.join(results, f"{mode}.json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                outcomes[mode] = RunOutcome.from_wire(json.load(fh))
        elif not outcomes or not any(o.needs_gpu for o in outcomes.values()):
            error = f"verify's worker process ended with status {returncode} before reporting this run"
            outcomes[mode] = RunOutcome(mode=mode, status="error", error=error, device=device)
            break
    return outcomes


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)  # the worker ends its current run's process group first
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _worker_env() -> dict[str, str]:
    """The worker must import this amplint, wherever it was imported from."""
    env = dict(os.environ)
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _relay(stream: BinaryIO, board: ProgressBoard, name: str) -> None:
    for line in iter(stream.readline, b""):
        board.write_line(name, line)
    stream.close()


def _read_progress(fd: int, board: ProgressBoard) -> None:
    with os.fdopen(fd, "rb") as fh:
        for line in fh:
            parts = line.decode(errors="replace").rstrip("\n").split("\t")
            if len(parts) == 3 and parts[1].isdigit():
                board.step(parts[0], int(parts[1]), _float(parts[2]))


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None
