"""``amplint check --add-noqa``: every current finding suppressed in place, other tools' directives kept."""

from __future__ import annotations

import subprocess
import sys

import pytest

import amplint
from amplint.add_noqa import add_directives

AUTOCAST = "torch.cuda.amp.autocast()"


def added(text: str) -> str:
    new_text, _, _ = add_directives(text, amplint.lint_source(text, "t.py"))
    return new_text


@pytest.mark.parametrize(
    "line, expected",
    [
        (f"ctx = {AUTOCAST}", f"ctx = {AUTOCAST}  # noqa: AMP001"),
        (f"ctx = {AUTOCAST}   ", f"ctx = {AUTOCAST}  # noqa: AMP001"),
        (f"ctx = {AUTOCAST}  # noqa: E501", f"ctx = {AUTOCAST}  # noqa: E501, AMP001"),
        (f"ctx = {AUTOCAST}  # noqa:E501,W291", f"ctx = {AUTOCAST}  # noqa: E501, W291, AMP001"),
        (f"ctx = {AUTOCAST}  # NOQA: E501 long line", f"ctx = {AUTOCAST}  # NOQA: E501, AMP001 long line"),
        (f"ctx = {AUTOCAST}  # type: ignore[attr]", f"ctx = {AUTOCAST}  # type: ignore[attr]  # noqa: AMP001"),
        (f"s = '# noqa: E501'; ctx = {AUTOCAST}", f"s = '# noqa: E501'; ctx = {AUTOCAST}  # noqa: AMP001"),
    ],
)
def test_directive_is_added_or_merged(line, expected):
    assert added(f"import torch\n{line}\n") == f"import torch\n{expected}\n"


def test_several_codes_on_one_line_are_listed_once_sorted():
    text = "import torch\nx = torch.cuda.amp.GradScaler(); torch.is_autocast_enabled()\n"
    assert added(text).splitlines()[1].endswith("  # noqa: AMP001, AMP014")


def test_line_ending_inside_a_string_is_not_touched():
    text = f'import torch\nctx = {AUTOCAST}; doc = """\ntext\n"""\n'
    new_text, count, skipped = add_directives(text, amplint.lint_source(text, "t.py"))
    assert (new_text, count, skipped) == (text, 0, [2])


def test_crlf_and_a_missing_final_newline_are_kept():
    text = f"import torch\r\nctx = {AUTOCAST}\r\nother = {AUTOCAST}"
    assert added(text) == f"import torch\r\nctx = {AUTOCAST}  # noqa: AMP001\r\nother = {AUTOCAST}  # noqa: AMP001"


def test_cli_adds_directives_and_the_next_check_passes(cli, files, tmp_path):
    files({
        "train.py": f"import torch\nctx = {AUTOCAST}  # noqa: E501\nscaler = torch.cuda.amp.GradScaler()\n",
        "clean.py": "x = 1\n",
    })
    (tmp_path / "legacy.py").write_bytes(
        b"# -*- coding: latin-1 -*-\nimport torch\nname = '\xe9'; ctx = torch.cuda.amp.autocast()\n"
    )
    run = cli("check", "--add-noqa", ".")
    assert run.exit_code == 0, run
    assert run.stderr == "Added 3 noqa directives.\n"
    assert (tmp_path / "train.py").read_text() == (
        f"import torch\nctx = {AUTOCAST}  # noqa: E501, AMP001\nscaler = torch.cuda.amp.GradScaler()  # noqa: AMP001\n"
    )
    assert (tmp_path / "legacy.py").read_bytes().endswith(b"'\xe9'; ctx = torch.cuda.amp.autocast()  # noqa: AMP001\n")
    assert (tmp_path / "clean.py").read_text() == "x = 1\n"
    again = cli("check", "--add-noqa", ".")
    assert (again.exit_code, again.stderr) == (0, "Added 0 noqa directives.\n")
    assert cli("check", "--no-cache", ".").exit_code == 0


def test_flake8_still_reads_the_merged_directive(files, tmp_path):
    long_line = f"ctx = {AUTOCAST}  # noqa: E501 " + "x" * 80
    files({"train.py": f"import torch\n{long_line}\n"})
    subprocess.run([sys.executable, "-m", "amplint", "check", "--add-noqa", "train.py"], cwd=tmp_path, check=True, capture_output=True)
    assert "# noqa: E501, AMP001" in (tmp_path / "train.py").read_text()
    run = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "AMP,E501", "train.py"],
        cwd=tmp_path, capture_output=True, text=True,
    )
    assert (run.returncode, run.stdout) == (0, "")


def test_unplaceable_finding_is_a_warning_and_a_broken_file_an_error(cli, files, tmp_path):
    inside_string = f'import torch\nctx = {AUTOCAST}; doc = """\ntext\n"""\n'
    files({"a.py": inside_string, "broken.py": "import torch\nwith torch.autocast(:\n", "b.py": f"import torch\nctx = {AUTOCAST}\n"})
    run = cli("check", "--add-noqa", ".")
    assert run.exit_code == 2
    assert "amplint: warning: a.py:2: no comment can go at the end of this line" in run.stderr
    assert "amplint: error: broken.py:2:" in run.stderr and "(not suppressible)" in run.stderr
    assert run.stderr.endswith("Added 1 noqa directive.\n")
    assert (tmp_path / "a.py").read_text() == inside_string
    assert (tmp_path / "b.py").read_text().endswith("# noqa: AMP001\n")


@pytest.mark.parametrize("extra, message", [(["--fix"], "cannot be combined with --fix"), (["-"], "cannot read stdin")])
def test_add_noqa_refuses_fix_and_stdin(cli, extra, message):
    run = cli("check", "--add-noqa", *extra, input="x = 1\n")
    assert run.exit_code == 2
    assert message in run.stderr
