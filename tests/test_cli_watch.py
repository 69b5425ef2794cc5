"""``amplint check --watch`` in a real process: it checks again after a change and ends cleanly on Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEPRECATED = "import torch\n\nwith torch.cuda.amp.autocast():\n    pass\n"


def _start(cwd: Path, max_runs: int | None, log: Path) -> subprocess.Popen:
    env = {**os.environ, "AMPLINT_WATCH_INTERVAL": "0.1", "PYTHONPATH": str(ROOT / "src")}
    env.pop("AMPLINT_CACHE_DIR", None)
    if max_runs is not None:
        env["AMPLINT_WATCH_MAX_RUNS"] = str(max_runs)
    return subprocess.Popen(
        [sys.executable, "-m", "amplint", "check", "--watch", "--no-cache", "--output-format", "concise", "."],
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=log.open("w"), text=True,
    )


def _wait_for(log: Path, text: str, count: int = 1, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.read_text().count(text) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{text!r} not seen {count}x in: {log.read_text()!r}")


def test_watch_checks_again_after_a_change(tmp_path):
    (tmp_path / "train.py").write_text("x = 1\n")
    log = tmp_path / "stderr.txt"
    proc = _start(tmp_path, max_runs=2, log=log)
    try:
        _wait_for(log, "Watching for file changes")
        time.sleep(0.05)
        (tmp_path / "train.py").write_text(DEPRECATED)
        stdout, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0
    stderr = log.read_text()
    assert stderr.splitlines() == [
        "Watching for file changes (Ctrl-C to stop).",
        "File change detected; checking again.",
    ]
    assert stdout.startswith("All checks passed!\ntrain.py:3:6: AMP001 [*]")
    assert stdout.endswith("\nFound 1 error (1 fixable with --fix).\n")


def test_watch_ends_cleanly_on_sigint(tmp_path):
    (tmp_path / "train.py").write_text(DEPRECATED)
    log = tmp_path / "stderr.txt"
    proc = _start(tmp_path, max_runs=None, log=log)
    try:
        _wait_for(log, "Watching for file changes")
        proc.send_signal(signal.SIGINT)
        stdout, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0
    assert "Traceback" not in log.read_text() and "error" not in log.read_text().replace("1 error", "")
    assert stdout.count("AMP001") == 1


def test_watch_refuses_stdin(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "amplint", "check", "--watch", "-"], cwd=tmp_path, input="",
                          capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert proc.returncode == 2
    assert proc.stderr == "amplint: error: --watch cannot be combined with stdin, --add-noqa, --show-files or --show-settings\n"
