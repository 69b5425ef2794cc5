"""flake8 runs amplint's rules through its plugin entry point: same findings, flake8's format and noqa."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEPRECATED = "import torch\n\nwith torch.cuda.amp.autocast():\n    pass\n"
LONG = "x" * 90


def flake8(*args: str, cwd: Path, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", *args],
        cwd=cwd, capture_output=True, text=True, input=input, timeout=120,
    )


def amplint_concise(*args: str, cwd: Path) -> list[str]:
    run = subprocess.run(
        [sys.executable, "-m", "amplint", "check", "--output-format", "concise", "--no-cache", "-q", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,
    )
    return [line.replace(" [*] ", " ").replace(" [-] ", " ") for line in run.stdout.splitlines()]


@pytest.mark.parametrize("rule", ["AMP001", "AMP003"])
def test_flake8_reports_what_amplint_check_reports(rule):
    folder = ROOT / "fixtures" / rule
    run = flake8("--select", "AMP", "--jobs", "2", ".", cwd=folder)
    expected = sorted(amplint_concise(".", cwd=folder))
    assert expected, "the fixtures have findings"
    got = sorted(line.removeprefix("./") for line in run.stdout.splitlines())
    assert got == expected
    assert run.returncode == 1


def test_noqa_of_flake8_and_of_amplint(tmp_path):
    (tmp_path / "train.py").write_text(
        "import torch\n"
        f"with torch.cuda.amp.autocast():  # noqa: E501 {LONG}\n    pass\n"
        "with torch.cuda.amp.autocast():  # noqa: AMP001\n    pass\n"
        "with torch.cuda.amp.autocast():  # noqa\n    pass\n"
    )
    run = flake8("--select", "AMP,E501", "train.py", cwd=tmp_path)
    assert [line.split(" ", 2)[:2] for line in run.stdout.splitlines()] == [["train.py:2:6:", "AMP001"]]
    shown = flake8("--select", "AMP,E501", "--disable-noqa", "train.py", cwd=tmp_path)
    codes = [(line.split(":")[1], line.split(" ")[1]) for line in shown.stdout.splitlines()]
    assert codes == [("2", "AMP001"), ("2", "E501"), ("4", "AMP001"), ("6", "AMP001")]


def test_disable_noqa_reaches_parallel_workers(tmp_path):
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text("import torch\nwith torch.cuda.amp.autocast():  # noqa: AMP001\n    pass\n")
    run = flake8("--select", "AMP", "--disable-noqa", "--jobs", "2", ".", cwd=tmp_path)
    assert len(run.stdout.splitlines()) == 3, run.stdout + run.stderr


def test_amplint_configuration_applies_per_file(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.amplint]\nignore = ["AMP013"]\n[tool.amplint.per-file-ignores]\n"legacy/*" = ["AMP001"]\n'
    )
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.py").write_text(DEPRECATED)
    (tmp_path / "new.py").write_text(DEPRECATED)
    run = flake8("--select", "AMP", ".", cwd=tmp_path)
    assert [line.split(" ")[:2] for line in run.stdout.splitlines()] == [["./new.py:3:6:", "AMP001"]]


def test_flake8_select_narrows_to_one_rule(tmp_path):
    (tmp_path / "t.py").write_text(DEPRECATED + "torch.is_autocast_enabled()\n")
    both = flake8("--select", "AMP", "t.py", cwd=tmp_path).stdout
    assert re.findall(r"AMP0\d\d", both) == ["AMP001", "AMP014"]
    assert re.findall(r"AMP0\d\d", flake8("--select", "AMP014", "t.py", cwd=tmp_path).stdout) == ["AMP014"]


def test_stdin_uses_the_display_name(tmp_path):
    run = flake8("--select", "AMP", "--stdin-display-name", "train.py", "-", cwd=tmp_path, input=DEPRECATED)
    assert run.stdout.startswith("train.py:3:6: AMP001 `torch.cuda.amp.autocast` is deprecated")


def test_syntax_error_is_flake8s_e999_and_nothing_crashes(tmp_path):
    (tmp_path / "broken.py").write_text("import torch\ndef (:\n")
    run = flake8("--select", "AMP,E999", "broken.py", cwd=tmp_path)
    assert re.match(r"broken.py:2:\d+: E999 SyntaxError", run.stdout)
    assert "AMP" not in run.stdout
    assert "Traceback" not in run.stderr


def test_bad_amplint_configuration_is_reported_not_passed(tmp_path):
    (tmp_path / "amplint.toml").write_text('selct = ["AMP001"]\n')
    (tmp_path / "t.py").write_text(DEPRECATED)
    run = flake8("--select", "AMP", "t.py", cwd=tmp_path)
    assert run.returncode == 1
    assert "t.py:1:1: AMP000 amplint cannot lint this file: amplint.toml: unknown key 'selct'" in run.stdout
