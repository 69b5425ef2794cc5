"""The same tree gives the same findings in the same order, however the run is made."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


def _json(cwd: Path, target: str, *args: str) -> list[dict]:
    run = subprocess.run([sys.executable, "-m", "amplint", "check", "--output-format", "json", "--select", "ALL", *args, target],
                         cwd=cwd, capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stderr
    return json.loads(run.stdout)


def test_same_findings_across_jobs_cache_and_working_directory(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "fixtures", tree, ignore=shutil.ignore_patterns("*.snap", "*.fixed"))
    (tmp_path / "elsewhere").mkdir()
    baseline = _json(tree, ".", "--no-cache", "-j", "1")
    assert len(baseline) > 100
    assert _json(tree, ".", "--no-cache", "-j", "2") == baseline
    assert _json(tree, ".", "-j", "2") == baseline  # cold cache
    assert _json(tree, ".", "-j", "2") == baseline  # warm cache
    assert _json(tmp_path / "elsewhere", str(tree), "--no-cache") == baseline  # absolute filenames in JSON
