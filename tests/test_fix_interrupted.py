"""`--fix` interrupted or run twice at once: every file is the original or the complete fix.

Real processes over enough files for the worker pool: SIGINT to the process group (what a
terminal's Ctrl-C sends), SIGKILL of the parent alone (what an OOM killer or CI timeout
does), and two runs on the same tree at once. No temporary file may be left behind, and no
worker may outlive its parent.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import amplint
from amplint.pool import run_apart

FILES = 100
CHUNK = "".join(
    f"def step_{n}(model, x):\n    with torch.cuda.amp.autocast():\n        y = model(x) + {n}\n    return y\n\n"
    for n in range(3)
)


def _tree(root: Path) -> dict[str, tuple[str, str]]:
    """Write the files; returns each name's (original, fixed) text."""
    template = f"import torch\n\nINDEX = -1\n\n{CHUNK}"
    fixed_template = amplint.fix_source(template)
    assert fixed_template != template
    expected = {}
    for index in range(FILES):
        text = template.replace("INDEX = -1", f"INDEX = {index}")
        (root / f"m{index:03}.py").write_text(text)
        expected[f"m{index:03}.py"] = (text, fixed_template.replace("INDEX = -1", f"INDEX = {index}"))
    return expected


@pytest.fixture(autouse=True)
def _reap_leftovers():
    """Whatever the outcome, no process a test started survives it."""
    yield
    for pgid in _started:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _started.clear()


_started: list[int] = []


def _start(root: Path, *extra: str) -> subprocess.Popen:
    proc = _popen(root, *extra)
    _started.append(proc.pid)
    return proc


def _popen(root: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "amplint", "check", ".", "--fix", "--no-cache", "-j", "2", "-q", *extra],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: we can signal and find all of it
    )


def _group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, group = fields[0], int(fields[2])
        if group == pgid and state != "Z":
            members.append(int(entry))
    return members


def _wait_until_group_gone(pgid: int, seconds: float = 20) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        members = _group_members(pgid)
        if not members:
            return []
        time.sleep(0.05)
    return _group_members(pgid)


def _wait_for_first_fix(root: Path, expected, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        for name, (original, _) in expected.items():
            try:
                if (root / name).read_text() != original:
                    return
            except OSError:
                continue
        time.sleep(0.005)
    pytest.fail("the run ended (or never fixed a file) before it could be interrupted")


def _states(root: Path, expected) -> tuple[list[str], list[str]]:
    """Names still original and names completely fixed; fails on anything else."""
    assert sorted(p.name for p in root.iterdir()) == sorted(expected), "stray or missing files"
    original, fixed = [], []
    for name, (before, after) in expected.items():
        text = (root / name).read_text()
        assert text in (before, after), f"{name} is neither the original nor the complete fix"
        (original if text == before else fixed).append(name)
    return original, fixed


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads process groups from /proc")
def test_sigkill_of_the_parent_stops_the_workers(tmp_path):
    expected = _tree(tmp_path)
    proc = _start(tmp_path)
    _wait_for_first_fix(tmp_path, expected, proc)
    os.kill(proc.pid, signal.SIGKILL)  # the parent only, as an OOM killer would
    proc.wait()
    assert _wait_until_group_gone(proc.pid) == [], "pool workers outlived their killed parent"
    proc.communicate(timeout=10)  # nobody holds the pipes open any more
    original, fixed = _states(tmp_path, expected)
    assert fixed and original, "the kill did not land mid-run"
    time.sleep(0.5)
    assert _states(tmp_path, expected) == (original, fixed), "files were still being fixed after the kill"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads process groups from /proc")
def test_ctrl_c_exits_130_without_aborted_and_leaves_whole_files(tmp_path):
    expected = _tree(tmp_path)
    proc = _start(tmp_path)
    _wait_for_first_fix(tmp_path, expected, proc)
    os.killpg(proc.pid, signal.SIGINT)  # the whole group, as a terminal's Ctrl-C
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert stderr.decode() == "amplint: error: interrupted\n"
    assert _wait_until_group_gone(proc.pid) == []
    original, fixed = _states(tmp_path, expected)
    assert fixed and original, "the interrupt did not land mid-run"


def test_two_fix_runs_on_the_same_tree_at_once(tmp_path):
    expected = _tree(tmp_path)
    first, second = _start(tmp_path), _start(tmp_path)
    outputs = [proc.communicate(timeout=300) for proc in (first, second)]
    for proc, (_, stderr) in zip((first, second), outputs):
        # A file the other run fixed first is skipped with a warning, never overwritten.
        for line in stderr.decode().splitlines():
            assert "changed on disk while it was being fixed" in line, line
        assert proc.returncode in (0, 1)
    # Of two runs that read the same original, the first to write wins and the other skips.
    original, fixed = _states(tmp_path, expected)
    assert original == [] and len(fixed) == FILES


def _own_pid(_job) -> int:
    return os.getpid()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the writer is forked where fork exists")
def test_fixes_are_written_by_a_worker_not_by_the_parent():
    # Only a worker is signalled to finish its write when the parent is killed: the parent
    # itself would die between the temporary file's name and its rename.
    pids = run_apart(_own_pid, ["a.py", "b.py"])
    assert len(set(pids)) == 1 and pids[0] != os.getpid()
