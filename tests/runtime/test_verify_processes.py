"""Processes a script spawns end with verify, and SIGTERM/SIGHUP/Ctrl-C leave nothing behind.

Real verify processes of tiny CPU scripts: the script starts ``sleep 600`` and prints its pid
(stdout is passed through), so the test can tell whether verify ended it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from verify_helpers import ROOT, tiny_script

pytestmark = pytest.mark.slow

SPAWN = (
    "import subprocess, time\n"
    "sleeper = subprocess.Popen(['sleep', '600'])\n"
    "print('SPAWNED', sleeper.pid, flush=True)\n"
)
# slow enough that a signal sent after SPAWNED arrives mid-run
SLOW_STEP = "    time.sleep(0.05)\n"


def start_verify(tmp_path, script, *extra):
    scratch = tmp_path / "tmp"
    scratch.mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONWARNINGS="ignore", TMPDIR=str(scratch))
    cmd = [sys.executable, "-m", "amplint", "verify", str(script), "--device", "cpu", "--baseline", "none", *extra]
    # a session of its own, so the Ctrl-C test can signal verify's whole group as a terminal does
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env=env, start_new_session=True), scratch


def read_spawned_pid(proc) -> int:
    for line in proc.stdout:
        if line.startswith("SPAWNED "):
            return int(line.split()[1])
    raise AssertionError("the script never reported its sleep: " + proc.stderr.read()[-3000:])


def gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if _zombie(pid):  # dead, only waiting for a reaper (init here) to collect it
            return True
        time.sleep(0.1)
    return False


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def kill_leftover(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_process_the_script_spawns_ends_with_a_normal_run(tmp_path):
    script = tiny_script(tmp_path, before=SPAWN, steps=5)
    proc, _ = start_verify(tmp_path, script, "--steps", "3")
    pid = read_spawned_pid(proc)
    try:
        stdout, stderr = proc.communicate(timeout=180)
        assert proc.returncode == 0, stdout + stderr
        assert gone(pid), "the script's sleep outlived verify"
    finally:
        kill_leftover(pid)


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)])
def test_signal_mid_run_stops_everything_and_removes_the_temporary_folder(tmp_path, sig, code):
    script = tiny_script(tmp_path, before=SPAWN, steps=100000)
    script.write_text(script.read_text().replace("    scaler.update()\n", "    scaler.update()\n" + SLOW_STEP))
    proc, scratch = start_verify(tmp_path, script, "--steps", "100000")
    pid = read_spawned_pid(proc)
    try:
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)  # the whole foreground group, as a terminal's Ctrl-C
        else:
            proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == code, stdout + stderr
        assert len(stderr.strip().splitlines()) == 1 and "the runs were stopped" in stderr, stderr
        assert not list(scratch.glob("amplint-verify-*"))
        assert gone(pid), "the script's sleep outlived verify"
    finally:
        kill_leftover(pid)
        if proc.poll() is None:
            proc.kill()


def test_sigterm_mid_ddp_run_ends_torchrun_ranks_and_what_they_spawned(tmp_path):
    # torchrun puts each rank in a session of its own: ending torchrun's group alone misses them
    script = tmp_path / "ddp_spawn.py"
    body = (ROOT / "fixtures" / "training" / "ddp_correct.py").read_text()
    script.write_text(SPAWN + body.replace("    for step in range(args.steps):\n",
                                           "    for step in range(args.steps):\n    " + SLOW_STEP))
    proc, scratch = start_verify(tmp_path, script, "--nproc-per-node", "2", "--steps", "2000", "--", "--steps", "2000")
    pids = [read_spawned_pid(proc), read_spawned_pid(proc)]
    try:
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 143, stdout + stderr[-3000:]
        assert all(gone(pid) for pid in pids), "a rank's sleep outlived verify"
        assert not list(scratch.glob("amplint-ddp-*"))
    finally:
        for pid in pids:
            kill_leftover(pid)
        if proc.poll() is None:
            proc.kill()
