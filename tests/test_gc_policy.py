"""The command's garbage-collector settings (amplint/gc_policy.py), read from real processes.

The ``amplint`` command freezes what its imports made; amplint called as a library (``main``
in-process, the engine's functions) must leave the host's collector as it found it.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest

from amplint import gc_policy
from amplint.engine import lint_source

_PROBE = """
import atexit, gc, json, sys
report, entry, args = sys.argv[1], sys.argv[2], sys.argv[3:]

def write_state():
    with open(report, "w") as handle:
        json.dump({"frozen": gc.get_freeze_count(), "threshold": gc.get_threshold(),
                   "enabled": gc.isenabled(), "libcst": "libcst" in sys.modules}, handle)

atexit.register(write_state)
import amplint.cli.main as cli
sys.argv = ["amplint", *args]
if entry == "console":
    cli.console_main()
else:
    cli.main(args)
"""

WITH_FINDING = "import torch\n\nif torch.is_autocast_enabled():\n    pass\n"
CLEAN = "import os\n\nprint(os.getcwd())\n"


def default_threshold() -> list[int]:
    out = subprocess.run([sys.executable, "-c", "import gc; print(list(gc.get_threshold()))"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def collector_state(tmp_path: Path, entry: str, *args: str) -> dict:
    report = tmp_path / "gc.json"
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, str(report), entry, *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(report.read_text())


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(WITH_FINDING)
    (tmp_path / "plain.py").write_text(CLEAN)
    return tmp_path


def test_the_command_freezes_what_parsing_imported(files: Path) -> None:
    state = collector_state(files, "console", "check", "--no-cache", "train.py")
    assert state["libcst"]
    # libcst's node classes alone are tens of thousands of objects.
    assert state["frozen"] > 20_000
    assert state["threshold"] == default_threshold()
    assert state["enabled"]


def test_a_clean_run_freezes_only_its_start_up_imports(files: Path) -> None:
    state = collector_state(files, "console", "check", "--no-cache", "plain.py")
    assert not state["libcst"]
    assert 0 < state["frozen"] < 20_000
    assert state["enabled"]


@pytest.mark.parametrize("args", [("rules",), ("check", "--help"), ("check", "--no-cache", "--select", "NOPE1", "train.py")],
                         ids=["click-command", "help", "usage-error"])
def test_every_path_of_the_command_leaves_the_collector_running(files: Path, args: tuple[str, ...]) -> None:
    report = files / "gc.json"
    subprocess.run([sys.executable, "-c", _PROBE, str(report), "console", *args], cwd=files, capture_output=True, timeout=120)
    assert json.loads(report.read_text())["enabled"]


def test_main_called_in_process_leaves_the_collector_alone(files: Path) -> None:
    state = collector_state(files, "main", "check", "--no-cache", "train.py")
    assert state["libcst"]
    assert state["frozen"] == 0
    assert state["threshold"] == default_threshold()
    assert state["enabled"]


def test_importing_is_a_no_op_for_a_library_caller() -> None:
    before = (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count())
    with gc_policy.importing():
        assert gc.isenabled()
    assert lint_source(WITH_FINDING)
    assert (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()) == before
