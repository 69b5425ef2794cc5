"""The click-free parser of ``amplint check`` gives exactly what click gives, or leaves the line to click."""

from __future__ import annotations

import click
import pytest
from hypothesis import given, settings, strategies as st

from amplint.cli.fastparse import parse_check_arguments
from amplint.cli.group import check_command
from amplint.cli.spec import CHECK_OPTIONS

# What pre-commit, editors, CI scripts and people type: every one must skip click.
EVERYDAY = [
    [],
    ["train.py"],
    ["src", "tests"],
    ["--fix", "train.py"],
    ["--force-exclude", "a.py", "b.py", "c.py"],
    ["--output-format", "github", "."],
    ["--output-format=json", "--exit-zero", "src"],
    ["--format", "concise", "-q", "train.py"],
    ["--select", "AMP001,AMP003", "--ignore", "AMP014", "."],
    ["--select=ALL", "--extend-select", "AMP100", "--unfixable", "AMP005"],
    ["--fix", "--unsafe-fixes", "--show-fixes", "--diff", "train.py"],
    ["-j", "2", "--no-cache", "train.py"],
    ["-j2", "-o", "report.txt", "train.py"],
    ["--cache-dir", "/tmp/amplint-cache", "--config", "pyproject.toml", "."],
    ["--stdin-filename", "train.py", "-"],
    ["--no-respect-gitignore", "--respect-gitignore", "--no-fix", "."],
    ["--target-torch", "2.2", "--extend-exclude", "build/", "--exclude", "vendor/"],
    ["--", "-weird-name.py"],
    ["train.py", "--statistics", "--exit-non-zero-on-fix"],
]

# Lines only click can explain (help, mistakes): the fast parser must hand them over.
FOR_CLICK = [
    ["--help"],
    ["-h"],
    ["--bogus"],
    ["--fix=yes"],
    ["-qv", "a.py"],
    ["--output-format", "xml"],
    ["--output-format"],
    ["-j", "0"],
    ["-j", "two"],
    ["--select", "-q"],
    ["--fi", "a.py"],
]


def click_reading(args: list[str]) -> tuple[list[str], dict] | None:
    try:
        context = check_command.make_context("check", list(args), resilient_parsing=False)
    except click.exceptions.Exit:
        return None
    except click.UsageError:
        return None
    params = dict(context.params)
    return list(params.pop("paths")), params


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for option in CHECK_OPTIONS:
        if option.envvar:
            monkeypatch.delenv(option.envvar, raising=False)


@pytest.mark.parametrize("args", EVERYDAY, ids=" ".join)
def test_everyday_command_lines_are_read_without_click_exactly_as_click_reads_them(args):
    fast = parse_check_arguments(args, environ={})
    assert fast is not None
    assert fast == click_reading(args)


@pytest.mark.parametrize("args", FOR_CLICK, ids=" ".join)
def test_help_and_mistakes_are_left_to_click(args):
    assert parse_check_arguments(args, environ={}) is None


def test_an_output_file_that_is_a_folder_is_left_to_click(tmp_path):
    (tmp_path / "out").mkdir()
    assert parse_check_arguments(["-o", "out", "a.py"], environ={}) is None
    assert click_reading(["-o", "out", "a.py"]) is None


def test_a_cache_dir_that_is_a_file_is_left_to_click(tmp_path):
    (tmp_path / "cache").write_text("")
    assert parse_check_arguments(["--cache-dir", "cache"], environ={}) is None
    assert click_reading(["--cache-dir", "cache"]) is None


def test_environment_variables_count_as_click_counts_them(monkeypatch):
    monkeypatch.setenv("AMPLINT_OUTPUT_FORMAT", "github")
    monkeypatch.setenv("AMPLINT_OUTPUT_FILE", "findings.txt")
    import os

    fast = parse_check_arguments(["a.py"], environ=dict(os.environ))
    assert fast is not None and fast == click_reading(["a.py"])
    assert fast[1]["output_format"] == "github" and fast[1]["output_file"] == "findings.txt"
    # The command line wins over the variable.
    fast = parse_check_arguments(["--output-format", "json", "a.py"], environ=dict(os.environ))
    assert fast == click_reading(["--output-format", "json", "a.py"]) and fast[1]["output_format"] == "json"
    monkeypatch.setenv("AMPLINT_OUTPUT_FORMAT", "xml")
    assert parse_check_arguments(["a.py"], environ=dict(os.environ)) is None  # click names the bad variable


def test_shell_completion_is_left_to_click():
    assert parse_check_arguments(["a.py"], environ={"_AMPLINT_COMPLETE": "bash_source"}) is None


_WORDS = st.sampled_from(
    [name for option in CHECK_OPTIONS for name in (*option.names, *option.off_names)]
    + ["a.py", "src", "-", "--", "json", "github", "2", "0", "AMP001", "-x", "--help", "--fix=1", "=", "", "-j3", "-qv",
       "--select=AMP003", "--output-format=concise"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_WORDS, max_size=8))
def test_any_command_line_reads_the_same_or_goes_to_click(args):
    fast = parse_check_arguments(args, environ={})
    if fast is not None:
        assert fast == click_reading(args), args
