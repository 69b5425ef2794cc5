"""A report path that is also an input is refused before anything is linted, fixed or written:
``-o t.py t.py`` (with or without --fix), AMPLINT_OUTPUT_FILE, another name of the same file, a
file found in a folder given, ``--stdin-filename`` and the configuration file."""

from __future__ import annotations

import os

import pytest

DEPRECATED = "import torch\nwith torch.cuda.amp.autocast():\n    pass\n"
REFUSED = "amplint: error: --output-file t.py is also an input; refusing to overwrite it\n"


def _untouched(tmp_path, name="t.py", text=DEPRECATED) -> bool:
    return (tmp_path / name).read_bytes() == text.encode()


@pytest.mark.parametrize("mode", [[], ["--fix"], ["--fix-only"], ["--diff"], ["--fix", "--output-format", "json"]])
def test_report_onto_the_linted_file_is_refused_and_nothing_is_fixed(cli, files, tmp_path, mode):
    files({"t.py": DEPRECATED})
    run = cli("check", "--no-cache", *mode, "-o", "t.py", "t.py")
    assert (run.exit_code, run.stdout, run.stderr) == (2, "", REFUSED)
    assert _untouched(tmp_path)  # before: the fix was written, then the report replaced it


def test_a_real_process_prints_one_line_and_no_traceback(amplint_exe, files, tmp_path):
    files({"t.py": DEPRECATED})
    run = amplint_exe("check", "--fix", "-o", "t.py", "t.py")
    assert (run.exit_code, run.stdout, run.stderr) == (2, "", REFUSED)
    assert _untouched(tmp_path) and not (tmp_path / ".amplint_cache").exists()


def test_output_file_from_the_environment_is_refused_and_named_so(cli, files, tmp_path, monkeypatch):
    files({"t.py": DEPRECATED})
    monkeypatch.setenv("AMPLINT_OUTPUT_FILE", "t.py")
    run = cli("check", "--no-cache", "t.py")
    assert run.exit_code == 2 and run.stdout == ""
    assert run.stderr == "amplint: error: AMPLINT_OUTPUT_FILE=t.py is also an input; refusing to overwrite it\n"
    assert _untouched(tmp_path)


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_another_name_of_the_same_file_is_refused(cli, files, tmp_path, link):
    files({"t.py": DEPRECATED})
    (os.symlink if link == "symlink" else os.link)(tmp_path / "t.py", tmp_path / "other.py")
    run = cli("check", "--no-cache", "--fix", "-o", "other.py", "t.py")
    assert run.exit_code == 2
    assert run.stderr == "amplint: error: --output-file other.py is also an input (t.py); refusing to overwrite it\n"
    assert _untouched(tmp_path)


def test_dot_slash_spelling_is_the_same_file(cli, files, tmp_path):
    files({"t.py": DEPRECATED})
    run = cli("check", "--no-cache", "-o", "./t.py", "t.py")
    assert run.exit_code == 2 and "--output-file ./t.py is also an input (t.py)" in run.stderr
    assert _untouched(tmp_path)


def test_report_onto_a_file_inside_a_linted_folder(cli, files, tmp_path):
    files({"src/a.py": DEPRECATED, "src/b.py": DEPRECATED})
    run = cli("check", "--no-cache", "--fix", "-o", "src/a.py", "src/")
    assert run.exit_code == 2 and run.stdout == ""
    assert run.stderr == "amplint: error: --output-file src/a.py is also an input; refusing to overwrite it\n"
    assert _untouched(tmp_path, "src/a.py") and _untouched(tmp_path, "src/b.py")  # b.py not fixed either


def test_report_onto_the_stdin_filename_is_refused_before_stdin_is_read(cli, files, tmp_path):
    files({"t.py": DEPRECATED})
    run = cli("check", "--fix", "--stdin-filename", "t.py", "-o", "t.py", "-", input=DEPRECATED)
    assert (run.exit_code, run.stdout, run.stderr) == (2, "", REFUSED)
    assert _untouched(tmp_path)
    # an editor's buffer not saved yet: no file on disk, and none is made
    run = cli("check", "--stdin-filename", "new.py", "-o", "new.py", "-", input=DEPRECATED)
    assert run.exit_code == 2 and "--output-file new.py is also an input" in run.stderr
    assert not (tmp_path / "new.py").exists()


def test_report_onto_the_configuration_file_is_refused(cli, files, tmp_path):
    config = "[tool.amplint]\nselect = ['AMP001']\n"
    files({"t.py": DEPRECATED, "pyproject.toml": config})
    run = cli("check", "--no-cache", "-o", "pyproject.toml", "t.py")
    assert run.exit_code == 2 and "--output-file pyproject.toml is also an input" in run.stderr
    assert _untouched(tmp_path, "pyproject.toml", config)


def test_watch_refuses_before_its_first_run(cli, files, tmp_path, monkeypatch):
    files({"t.py": DEPRECATED})
    monkeypatch.setenv("AMPLINT_WATCH_MAX_RUNS", "1")
    run = cli("check", "--no-cache", "--watch", "--fix", "-o", "t.py", "t.py")
    assert run.exit_code == 2 and run.stderr == REFUSED
    assert _untouched(tmp_path)


def test_a_report_beside_the_inputs_is_still_written(cli, files, tmp_path):
    files({"t.py": DEPRECATED})
    run = cli("check", "--no-cache", "--fix", "--output-format", "concise", "-o", "report.txt", "t.py")
    assert run.exit_code == 0 and run.stdout == ""
    assert "torch.amp.autocast" in (tmp_path / "t.py").read_text(encoding="utf-8")  # fixed
    assert (tmp_path / "report.txt").exists()
