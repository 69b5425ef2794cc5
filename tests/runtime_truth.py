"""Shared helpers for the runtime-truth tests: run a fixtures/runtime script, fix a copy with the CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

RUNTIME = Path(__file__).resolve().parents[1] / "fixtures" / "runtime"
TIMEOUT = 180


def run_script(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=TIMEOUT, cwd=path.parent)


def last_json(result: subprocess.CompletedProcess) -> dict:
    """The JSON report a script prints as its last line (it must have exited cleanly)."""
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def amplint_check(path: Path, code: str, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "amplint", "check", "--no-cache", *options, "--select", code, str(path)],
        capture_output=True, text=True, timeout=TIMEOUT, cwd=path.parent,
    )


def reported(path: Path, code: str) -> bool:
    result = amplint_check(path, code)
    return result.returncode == 1 and code in result.stdout


def copy_script(tmp_path: Path, name: str) -> Path:
    copy = tmp_path / name
    shutil.copy(RUNTIME / name, copy)
    return copy


def fix_with_cli(copy: Path, code: str, unsafe: bool = False) -> str:
    """``amplint check --fix [--unsafe-fixes] --select CODE`` on ``copy``; afterwards CODE reports nothing there."""
    before = copy.read_text()
    fixed = amplint_check(copy, code, "--fix", *(["--unsafe-fixes"] if unsafe else []))
    assert fixed.returncode in (0, 1), fixed.stdout + fixed.stderr
    again = amplint_check(copy, code)
    assert again.returncode == 0, again.stdout + again.stderr
    after = copy.read_text()
    assert after != before, f"{code} fixed nothing"
    return after
