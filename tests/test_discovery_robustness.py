"""Hostile trees and patterns: clear one-line messages, no duplicates, no hang, git's answers.

The unreadable directory is unreadable for real: the run happens in a forked child that has
dropped root to ``nobody`` (see as_nobody.py), because root lists any directory.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path

import pytest

import amplint.discovery as discovery
from amplint.discovery import IgnoreFile, discover, parse_pattern
from as_nobody import as_nobody

FINDING = "bad_call()\n"


def linted(run) -> list[str]:
    return sorted({item["filename"] for item in json.loads(run.stdout)})


# --------------------------------------------------------------------------- names and paths


def test_awkward_file_names_are_found_and_linted(cli, files, fake_rules, tmp_path):
    names = ["with space.py", "ünïcödé.py", "new\nline.py", "-dash.py", "--double.py"]
    files({name: FINDING for name in names})
    run = cli("--output-format", "json", "--no-cache")
    assert [os.path.basename(name) for name in linted(run)] == sorted(names)
    run = cli("--output-format", "json", "--no-cache", "--", "-dash.py", "--double.py", "new\nline.py")
    assert [os.path.basename(name) for name in linted(run)] == ["--double.py", "-dash.py", "new\nline.py"]


def test_a_path_given_twice_or_by_two_spellings_is_linted_once(cli, files, fake_rules, tmp_path):
    files({"pkg/a.py": FINDING})
    (tmp_path / "pkg" / "alias.py").symlink_to("a.py")
    run = cli("pkg/a.py", "pkg/a.py", "./pkg/a.py", "pkg", str(tmp_path / "pkg"), "--output-format", "json")
    assert len(json.loads(run.stdout)) == 1


def test_symlink_beside_its_target_is_fixed_once(cli, files, fake_rules, tmp_path):
    files({"pkg/a.py": FINDING})
    (tmp_path / "pkg" / "b.py").symlink_to("a.py")
    run = cli("pkg", "--fix", "--no-cache")
    assert (run.exit_code, run.stdout, run.stderr) == (0, "Found 1 error (1 fixed, 0 remaining).\n", "")
    assert (tmp_path / "pkg" / "a.py").read_text() == "good_call()\n" and (tmp_path / "pkg" / "b.py").is_symlink()


def test_symlink_loops_are_one_line_each(cli, files, fake_rules, tmp_path):
    files({"ok.py": FINDING, "pkg/a.py": ""})
    (tmp_path / "self.py").symlink_to("self.py")
    (tmp_path / "ping.py").symlink_to("pong.py")
    (tmp_path / "pong.py").symlink_to("ping.py")
    (tmp_path / "pkg" / "up").symlink_to("..", target_is_directory=True)  # a directory loop: not followed
    run = cli(".", "self.py", "--output-format", "concise", "--no-cache")
    assert run.report == "ok.py:1:1: AMP991 [*] `bad_call` is not allowed\n"
    assert run.stderr.splitlines() == [
        "amplint: error: ping.py: cannot read file (Too many levels of symbolic links)",
        "amplint: error: pong.py: cannot read file (Too many levels of symbolic links)",
        "amplint: error: self.py: cannot read file (Too many levels of symbolic links)",
    ]
    assert run.summary == "Found 1 error (1 fixable with --fix). 3 files could not be checked."
    assert run.exit_code == 1


def test_exclude_that_matches_everything_warns_and_ends(cli, files, fake_rules):
    files({"a.py": FINDING, "pkg/b.py": FINDING})
    for pattern in ("*", "**", "*.py", "/*"):
        run = cli(".", "--exclude", pattern, "--no-cache")
        assert (run.exit_code, run.stdout) == (0, "All checks passed!\n"), pattern
        assert run.stderr == "amplint: warning: no Python files found in .\n", pattern


# --------------------------------------------------------------------------- unreadable directories


def _check_in(directory: str):
    from click.testing import CliRunner

    from amplint.cli.main import main_group

    before = os.getcwd()
    os.chdir(directory)
    try:
        result = CliRunner().invoke(main_group, [".", "--no-cache", "--output-format", "concise"])
    finally:
        os.chdir(before)
    return result.exit_code, result.stdout, result.stderr


def test_unreadable_directory_is_a_one_line_error(fake_rules):
    directory = Path(tempfile.mkdtemp(prefix="amplint-discovery-"))
    try:
        directory.chmod(0o755)
        (directory / "ok.py").write_text(FINDING)
        (directory / "secret").mkdir()
        (directory / "secret" / "hidden.py").write_text(FINDING)
        _check_in(str(directory))  # import what a run needs while still root
        (directory / "secret").chmod(0o700)  # root's: nobody may not list it
        code, stdout, stderr = as_nobody(_check_in, str(directory))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    assert stdout == (
        "ok.py:1:1: AMP991 [*] `bad_call` is not allowed\n"
        "Found 1 error (1 fixable with --fix). 1 file could not be checked.\n"
    )
    assert stderr.splitlines() == ["amplint: error: secret: cannot read directory (Permission denied)"]
    assert code == 1


# --------------------------------------------------------------------------- bad globs


@pytest.mark.parametrize("option", ["--exclude", "--extend-exclude"])
def test_bad_glob_on_the_command_line_names_the_option(cli, files, option):
    files({"a.py": ""})
    run = cli(".", option, "[z-a]")
    assert (run.exit_code, run.stdout) == (2, "")
    assert run.stderr == f"amplint: error: {option}: invalid pattern '[z-a]': bad character range z-a\n"


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("[z-a]", "bad character range z-a"),
        ("x[9-0]y.py", "bad character range 9-0"),
        ("a[b", "unclosed '[' (write '\\[' for a literal bracket)"),
        ("[[:nope:]]", "unknown character class [:nope:]"),
    ],
)
def test_check_pattern_names_the_problem(pattern, problem):
    with pytest.raises(discovery.PatternError) as info:
        discovery.check_pattern(pattern)
    assert str(info.value) == f"invalid pattern {pattern!r}: {problem}"


def test_bad_glob_in_gitignore_matches_what_git_matches(cli, files, fake_rules):
    # git: a reversed range matches its first character only, an unclosed "[" nothing.
    files({".git/HEAD": "", ".gitignore": "[y-a]*.py\ngen[.py\n", "a.py": FINDING, "gen[.py": FINDING,
           "yes.py": FINDING})
    run = cli(".", "--output-format", "json", "--no-cache")
    assert (run.exit_code, run.stderr) == (1, "")
    assert [os.path.basename(name) for name in linted(run)] == ["a.py", "gen[.py"]


def test_patterns_that_look_like_nested_sets_raise_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for line in ("[[a]", "[a--b]", "[a&&b]", "[a||b]", "[a~~b]", "[[:digit:]]x", "[]a]", "[!]a]"):
            parse_pattern(line)


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("[a-cz-a]x", "bx", True),
        ("[a-cz-a]x", "zx", True),  # git: a reversed range matches its first character only
        ("[a-cz-a]x", "yx", None),
        ("[[:digit:]]x", "7x", True),
        ("[[:digit:]]x", "ax", None),
        ("[!]a]x", "bx", True),
        ("[!]a]x", "]x", None),
        ("[\\]]x", "]x", True),
        ("a?.py", "a\u00e9.py", None),  # "?" is one byte, as in git; é is two
        ("a??.py", "a\u00e9.py", True),
        ("\u00e9*.py", "\u00e9t\u00e9.py", True),
    ],
)
def test_class_and_byte_semantics(pattern, path, expected):
    assert IgnoreFile.from_lines(Path("/r"), [pattern]).match(path, False) is expected


def test_gitignore_with_bom_crlf_and_form_feed(files, tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_bytes(b"\xef\xbb\xbfskip.py\r\nalso\x0cname.py\n")
    files({"skip.py": "", "also\x0cname.py": "", "keep.py": ""})
    assert [p.name for p in discover([str(tmp_path)]).files] == ["keep.py"]


# --------------------------------------------------------------------------- agreement with git

GITIGNORE = """\
*_gen.py
!keep_gen.py
/top.py
logs/
**/deep/*.py
a?.py
[z-a].py
[a-cz-a]x*.py
[[:digit:]]*.py
\\#hash.py
\\!bang.py
space.py\\ 
trail.py   
sub/**/inner.py
[!b]b.py
gen[.py
"""

TREE = [
    "x_gen.py", "keep_gen.py", "top.py", "sub/top.py", "logs/l.py", "sub/logs/m.py", "one/deep/d.py",
    "deep/e.py", "ab.py", "a\u00e9.py", "z.py", "bx1.py", "zx1.py", "1st.py", "#hash.py", "!bang.py",
    "space.py ", "trail.py", "sub/x/y/inner.py", "sub/inner.py", "bb.py", "cb.py", "plain.py",
    "dir with space/ok.py", "gen[.py", "\u00fcml\u00e4ut/\u00f6.py",
]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_discovery_agrees_with_git_ls_files(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text(GITIGNORE)
    for name in TREE:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    listed = subprocess.run(
        ["git", "-c", "core.quotepath=off", "ls-files", "-z", "--others", "--exclude-standard"],
        cwd=tmp_path, capture_output=True, check=True,
    ).stdout.decode().split("\0")
    by_git = sorted(name for name in listed if name.endswith(".py"))
    ours = sorted(p.relative_to(tmp_path).as_posix() for p in discover([str(tmp_path)]).files)
    assert ours == by_git
    # The cases that used to differ or raise.
    assert "a\u00e9.py" in ours and "z.py" not in ours and "zx1.py" not in ours
