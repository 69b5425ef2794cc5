"""The process that runs the user's script: ``python -m amplint.runtime.worker REQUEST.json``.

It imports torch once, then forks one child per run (AMP, then the FP32 reference), so each run
starts from a clean interpreter: module-level state, ``os.chdir``, threads and patches of one run
never reach the other. Each child writes its :class:`RunOutcome` to ``<results>/<mode>.json`` and
ends with ``os._exit`` so a non-daemon thread the script started cannot keep it alive. This
process enforces the per-run timeout, and turns a child that dies without reporting
(``os._exit``, a signal, a crash in native code) into an outcome that says so.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from typing import Any

from .precision import PrecisionPlan
from .process_groups import end_groups
from .runner import RunOutcome, Target

_child_pid: int | None = None


def main(request_path: str) -> int:
    with open(request_path, encoding="utf-8") as fh:
        req = json.load(fh)
    die_with_parent()
    signal.signal(signal.SIGTERM, _terminate)
    _preload()

    progress_fd = req.get("progress_fd")
    for side in req["sides"]:
        outcome = run_side(req, side, progress_fd)
        write_outcome(req["results"], outcome)
        if outcome.needs_gpu:
            break  # the reference would fail the same way
    return 0


def _preload() -> None:
    """Import once here what every run would import, so each forked run starts warm.

    Only imports: running torch ops here would start thread pools that do not survive a fork.
    """
    import torch  # noqa: F401
    import torch._dynamo  # noqa: F401  (optimizers import it on construction: seconds, per process)
    import torch.optim  # noqa: F401


def run_side(req: dict[str, Any], side: dict[str, Any], progress_fd: int | None) -> RunOutcome:
    global _child_pid
    mode = side["mode"]
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _child(req, side, write_fd)  # never returns
    _own_group(pid)
    _child_pid = pid
    os.close(write_fd)
    try:
        steps_seen, status = _watch(pid, read_fd, progress_fd, req.get("timeout") or None)
    finally:
        # what the script spawned outlives the run itself (re-parented to init) unless ended here
        end_groups([pid])
        _child_pid = None
    os.close(read_fd)
    path = os.path.join(req["results"], f"{mode}.json")
    if status is None:
        return _stub(mode, req, f"the run did not finish within --timeout {req['timeout']:g} s "
                     + (f"(after {steps_seen} optimizer steps)" if steps_seen
                        else "(the script never reached an optimizer step)"), timed_out=True)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            return RunOutcome.from_wire(json.load(fh))
    return _stub(mode, req, _death_message(status, steps_seen))


def _watch(pid: int, read_fd: int, progress_fd: int | None, timeout: float | None) -> tuple[int, int | None]:
    """Forward the child's step lines until it ends; (steps seen, wait status or None on timeout)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    steps_seen, buf, status = 0, b"", None
    while True:
        if status is None:
            done, wait_status = os.waitpid(pid, os.WNOHANG)
            if done:
                status = wait_status
        if deadline is not None and time.monotonic() > deadline and status is None:
            end_groups([pid])
            os.waitpid(pid, 0)
            return steps_seen, None
        ready, _, _ = select.select([read_fd], [], [], 0.1)
        # once the child is gone, whatever it wrote is already in the pipe; a process it left
        # behind may hold the pipe open, so do not wait for end-of-file
        chunk = os.read(read_fd, 65536) if ready else b""
        if not chunk and status is not None:
            return steps_seen, status
        buf += chunk
        *lines, buf = buf.split(b"\n")
        steps_seen += len(lines)
        if progress_fd is not None and lines:
            try:
                os.write(progress_fd, b"".join(line + b"\n" for line in lines))
            except OSError:  # nobody draws the bar any more; the run goes on
                progress_fd = None
        if not chunk and ready:  # end-of-file before the child was reaped: wait for it
            time.sleep(0.05)


def _child(req: dict[str, Any], side: dict[str, Any], write_fd: int) -> None:
    code = 1
    try:
        os.setpgid(0, 0)  # its own group, so a timeout also ends what the script spawned
        die_with_parent()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        import amplint.runtime.write_guard as write_guard
        from .runner import run_once

        mode = side["mode"]

        def on_step(count: int, record: dict) -> None:
            losses = [v for v in record.get("losses", []) if isinstance(v, float)]
            os.write(write_fd, f"{mode}\t{count}\t{losses[-1] if losses else ''}\n".encode())

        t = req["target"]
        outcome = run_once(
            Target(script=t["script"], module=t["module"], args=tuple(t["args"])),
            mode=mode, plan=PrecisionPlan(**side["plan"]), device=req["device"], steps=req["steps"],
            seed=req["seed"], on_step=on_step, checkpoint_root=os.path.join(req["checkpoints"], mode),
            verify_dir=os.path.dirname(req["results"]), evaluate=req.get("eval"),
        )
        write_guard.keep_refusing()  # this process only reports now, then exits
        write_outcome(req["results"], outcome)
        code = 0
    except BaseException:  # amplint's own failure: say why before the process ends
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def write_outcome(results: str, outcome: RunOutcome) -> None:
    path = os.path.join(results, f"{outcome.mode}.json")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(outcome.to_wire(), fh, default=str)
    os.replace(tmp, path)


def _stub(mode: str, req: dict[str, Any], error: str, timed_out: bool = False) -> RunOutcome:
    return RunOutcome(mode=mode, status="error", error=error, device=req["device"], timed_out=timed_out)


def _death_message(status: int, steps_seen: int) -> str:
    after = f" after {steps_seen} optimizer steps" if steps_seen else " before any optimizer step"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        return f"the process running the script was killed by {name}{after}"
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
    return f"the script ended its process with status {code}{after} (os._exit?) before verify could record the run"


def _own_group(pid: int) -> None:
    """The child moves into a group of its own too; doing it from both sides means the group
    exists before this process could need to end it."""
    try:
        os.setpgid(pid, pid)
    except OSError:  # the child did it first, or is already gone
        pass


def _terminate(signum: int, frame: Any) -> None:
    if _child_pid is not None:
        end_groups([_child_pid])
    os._exit(128 + signum)


def die_with_parent() -> None:
    """Linux: end this process when the one that started it dies, so no run outlives verify."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    except Exception:
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
