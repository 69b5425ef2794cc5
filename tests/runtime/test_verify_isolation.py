"""Hostile and broken scripts: each run in its own process, bounded, and reported in one line.

These take the real path (a worker process per verify, a forked process per run), so they use
tiny loops and `--baseline none` wherever the reference run adds nothing to what is tested.
"""

from __future__ import annotations

import pytest

from verify_helpers import run_cli, tiny_script

pytestmark = pytest.mark.slow


def verify_isolated(script, **kwargs):
    from amplint.runtime import verify

    kwargs.setdefault("device", "cpu")
    kwargs.setdefault("steps", 3)
    return verify(str(script), [], **kwargs)


def report_lines(stdout: str) -> list[str]:
    """What verify printed after its criteria, without the script's own output."""
    return [line for line in stdout.splitlines() if not line.startswith(("amplint verify ", "criteria", "  - "))]


def test_script_that_never_reaches_a_step_is_stopped_by_the_timeout(tmp_path):
    script = tmp_path / "spin.py"
    script.write_text("while True:\n    pass\n")
    result = verify_isolated(script, baseline="none", timeout=3)
    assert result.exit_code == 2
    assert "did not finish within --timeout 3 s" in result.message
    assert "never reached an optimizer step" in result.message


def test_non_daemon_thread_does_not_keep_verify_alive(tmp_path):
    script = tiny_script(tmp_path, before="import threading, time\nthreading.Thread(target=time.sleep, args=(3600,)).start()\n")
    proc = run_cli("verify", script, "--device", "cpu", "--steps", "3", "--baseline", "none", cwd=tmp_path, timeout=120)
    assert proc.stdout.rstrip().splitlines()[-1].startswith("verdict: TRAINS"), proc.stdout + proc.stderr


def test_os_exit_is_reported_in_one_line(tmp_path):
    script = tiny_script(tmp_path, before="import os\n", after="os._exit(5)\n", steps=2)
    proc = run_cli("verify", script, "--device", "cpu", "--steps", "3", "--baseline", "none", cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert report_lines(proc.stdout) == [
        "verdict: ERROR - could not verify: the script ended its process with status 5 after 2 optimizer steps "
        "(os._exit?) before verify could record the run"
    ]


def test_module_state_does_not_leak_into_the_reference(tmp_path):
    # the model lives in a helper module: a second run in the same interpreter would reuse it,
    # already trained by the AMP run
    (tmp_path / "shared_model.py").write_text("import torch\ntorch.manual_seed(0)\nmodel = torch.nn.Linear(4, 1)\n")
    script = tiny_script(tmp_path, before="import shared_model\n")
    script.write_text(script.read_text().replace("model = nn.Linear(4, 1)", "model = shared_model.model"))
    result = verify_isolated(script, steps=5)
    assert result.reference is not None and result.reference.steps
    assert result.amp.steps[0].loss == pytest.approx(result.reference.steps[0].loss, rel=1e-2)


def test_chdir_in_the_script_does_not_break_the_reference(tmp_path, monkeypatch):
    tiny_script(tmp_path, before="import os\nos.chdir('/')\n", steps=5)
    monkeypatch.chdir(tmp_path)
    result = verify_isolated("train.py", steps=5)
    assert result.reference is not None and len(result.reference.steps) == 5, result.message


def test_keyboard_interrupt_raised_by_the_script_is_an_error_not_a_failed_criterion(tmp_path):
    script = tiny_script(tmp_path, after="raise KeyboardInterrupt\n", steps=2)
    proc = run_cli("verify", script, "--device", "cpu", "--steps", "3", "--baseline", "none", cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    last = proc.stdout.rstrip().splitlines()[-1]
    assert last.startswith("verdict: ERROR - could not verify: the script raised KeyboardInterrupt (")
    assert "train.py:" in last


def test_unwritable_json_path_is_a_one_line_error_before_any_run(tmp_path):
    script = tiny_script(tmp_path)
    proc = run_cli("verify", script, "--json", "/proc/nope/x.json", cwd=tmp_path, timeout=120)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == "amplint verify: cannot write --json /proc/nope/x.json: no such directory /proc/nope\n"


@pytest.mark.parametrize(
    "body, expected",
    [
        ("import no_such_module_anywhere\n",
         "the script raised ModuleNotFoundError: No module named 'no_such_module_anywhere' ("),
        ("import sys\nsys.exit(3)\n", "the script exited with status 3, with and without AMP"),
    ],
    ids=["raises-at-import", "exits-non-zero"],
)
def test_script_that_cannot_run_is_reported_in_one_line(tmp_path, body, expected):
    from amplint.runtime.report import format_text

    script = tmp_path / "train.py"
    script.write_text(body)
    result = verify_isolated(script)
    assert result.exit_code == 2
    text = format_text(result)
    assert "\n" not in text and expected in text, text


def test_missing_script_is_one_line(tmp_path):
    proc = run_cli("verify", tmp_path / "absent.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert report_lines(proc.stdout) == [f"verdict: ERROR - could not verify: no such script: {tmp_path / 'absent.py'}"]


def test_help_says_it_runs_the_script_and_how_it_is_bounded():
    out = run_cli("verify", "--help").stdout
    assert "executes the script's code" in out
    assert "--timeout" in out and "3 inconclusive" in " ".join(out.split())
