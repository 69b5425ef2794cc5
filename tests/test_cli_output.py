"""Where the report goes and in which format: --output-format, AMPLINT_OUTPUT_FORMAT, the
``output-format`` key, --output-file; and a summary that never claims what was not checked."""

from __future__ import annotations

import json

import pytest

from amplint.cli.main import OUTPUT_FORMATS
from amplint.report import ALIASES, FORMATS

DEPRECATED = "import torch\nwith torch.cuda.amp.autocast():\n    pass\n"


def test_cli_choices_are_the_reporters():
    assert set(OUTPUT_FORMATS) == set(FORMATS) | set(ALIASES)


@pytest.mark.parametrize("output_format", FORMATS)
def test_every_format_runs_end_to_end(cli, files, output_format):
    files({"a.py": DEPRECATED})
    run = cli("check", "a.py", "--no-cache", "--output-format", output_format)
    assert run.exit_code == 1, run
    assert "AMP001" in run.stdout


def test_environment_variable_sets_the_format(cli, files, monkeypatch):
    files({"a.py": DEPRECATED})
    monkeypatch.setenv("AMPLINT_OUTPUT_FORMAT", "pylint")
    assert cli("check", "a.py", "--no-cache").stdout.startswith("a.py:2: [AMP001] ")
    # the option wins over the environment
    assert cli("check", "a.py", "--no-cache", "--output-format", "concise").stdout.startswith("a.py:2:6: AMP001")


def test_bad_environment_value_is_a_usage_error(cli, files, monkeypatch):
    files({"a.py": DEPRECATED})
    monkeypatch.setenv("AMPLINT_OUTPUT_FORMAT", "xml")
    run = cli("check", "a.py", "--no-cache")
    assert run.exit_code == 2
    assert "AMPLINT_OUTPUT_FORMAT" in run.stderr and "'xml'" in run.stderr


def test_config_key_sets_the_format_below_env_and_option(cli, files, monkeypatch):
    files({"a.py": DEPRECATED, "pyproject.toml": '[tool.amplint]\noutput-format = "grouped"\n'})
    assert cli("check", "a.py", "--no-cache").report == (
        "a.py:\n  2:6 AMP001 [*] `torch.cuda.amp.autocast` is deprecated; use `torch.amp.autocast(\"cuda\", ...)`\n"
    )
    monkeypatch.setenv("AMPLINT_OUTPUT_FORMAT", "pylint")
    assert cli("check", "a.py", "--no-cache").stdout.startswith("a.py:2: [AMP001]")
    assert cli("check", "a.py", "--no-cache", "--output-format", "json").stdout.startswith("[")


@pytest.mark.parametrize("value, shown", [('"xml"', "'output-format' must be one of: full, concise"), ("3", "must be one of")])
def test_bad_config_value_names_file_and_key(cli, files, value, shown):
    files({"a.py": DEPRECATED, "amplint.toml": f"output-format = {value}\n"})
    run = cli("check", "a.py", "--no-cache")
    assert run.exit_code == 2
    assert run.stderr.startswith("amplint: error: amplint.toml: 'output-format' must be one of:")
    assert shown in run.stderr and len(run.stderr.splitlines()) == 1


def test_output_file_gets_the_report_and_stdout_stays_empty(cli, files, tmp_path):
    files({"a.py": DEPRECATED})
    run = cli("check", "a.py", "--no-cache", "--output-format", "json", "-o", "reports/amplint.json")
    assert run.exit_code == 1 and run.stdout == ""
    (item,) = json.loads((tmp_path / "reports" / "amplint.json").read_text(encoding="utf-8"))
    assert item["code"] == "AMP001"


def test_output_file_for_human_formats_keeps_the_summary_on_stderr(cli, files, tmp_path):
    files({"a.py": DEPRECATED, "clean.py": "x = 1\n"})
    run = cli("check", "a.py", "--no-cache", "--output-file", "out.txt", "--output-format", "concise")
    assert run.stdout == "" and "Found 1 error" in run.stderr
    assert (tmp_path / "out.txt").read_text(encoding="utf-8").startswith("a.py:2:6: AMP001")
    clean = cli("check", "clean.py", "--no-cache", "-o", "out.txt")
    assert clean.exit_code == 0 and (tmp_path / "out.txt").read_text(encoding="utf-8") == ""  # replaced, not kept


def test_output_file_from_the_environment(cli, files, tmp_path, monkeypatch):
    files({"a.py": DEPRECATED})
    monkeypatch.setenv("AMPLINT_OUTPUT_FILE", "env.txt")
    run = cli("check", "a.py", "--no-cache", "--output-format", "pylint")
    assert run.stdout == "" and (tmp_path / "env.txt").read_text(encoding="utf-8").startswith("a.py:2: [AMP001]")


def test_output_file_takes_the_diff(cli, files, tmp_path):
    files({"a.py": DEPRECATED})
    run = cli("check", "a.py", "--no-cache", "--diff", "-o", "fix.diff")
    assert run.exit_code == 1 and run.stdout == ""
    assert (tmp_path / "fix.diff").read_text(encoding="utf-8").startswith("--- a.py\n+++ a.py\n")


def test_unwritable_output_file_is_one_line_error(cli, files, tmp_path):
    files({"a.py": DEPRECATED, "blocker": "a file, not a folder\n"})
    run = cli("check", "a.py", "--no-cache", "-o", "blocker/out.json")
    assert run.exit_code == 2
    assert run.stderr.splitlines()[-1].startswith("amplint: error: --output-file blocker/out.json: cannot write")


# --------------------------------------------------------------------------- summary


def test_missing_path_alone_is_not_all_checks_passed(cli, files):
    run = cli("check", "nonexist.py", "--no-cache")
    assert run.exit_code == 2
    assert "All checks passed!" not in run.stdout + run.stderr
    assert run.stderr.splitlines() == ["amplint: error: no such file or directory: nonexist.py"]
    assert run.stdout == "No findings in the files checked. 1 path not found.\n"


def test_missing_path_beside_a_clean_file(cli, files):
    files({"ok.py": "x = 1\n"})
    run = cli("check", "ok.py", "nope.py", "gone/", "--no-cache")
    assert run.exit_code == 2
    assert run.stdout == "No findings in the files checked. 2 paths not found.\n"


def test_unreadable_file_is_not_all_checks_passed(cli, files, tmp_path):
    (tmp_path / "latin.py").write_bytes(b"x = '\xff'\n")
    run = cli("check", "latin.py", "--no-cache")
    assert run.exit_code == 1
    assert "All checks passed!" not in run.stdout + run.stderr
    assert run.stdout == "No findings in the files checked. 1 file could not be checked.\n"


def test_clean_run_still_says_all_checks_passed(cli, files):
    files({"ok.py": "x = 1\n"})
    run = cli("check", "ok.py", "--no-cache")
    assert run.exit_code == 0 and (run.stdout, run.stderr) == ("All checks passed!\n", "")
