"""Bad input: one line naming the path on stderr, never a traceback, and the run goes on."""

from __future__ import annotations

import os
import stat

import pytest

from amplint.sourcefile import MAX_FILE_BYTES

GOOD_FINDING = "ok.py:1:1: AMP991 [*] `bad_call` is not allowed\n"


@pytest.fixture
def with_ok_file(files, fake_rules):
    files({"ok.py": "bad_call()\n"})


def assert_no_traceback(run):
    assert "Traceback" not in run.stdout + run.stderr


def test_syntax_error_is_amp000_and_others_still_linted(cli, files, with_ok_file):
    files({"broken.py": "bad_call(\n"})
    run = cli(".", "--output-format", "concise")
    assert run.exit_code == 1
    lines = run.stdout.splitlines()
    assert lines[0].startswith("broken.py:") and " AMP000 SyntaxError: " in lines[0]
    assert lines[1] + "\n" == GOOD_FINDING
    assert_no_traceback(run)


def test_syntax_error_cannot_be_ignored_by_noqa(cli, files, fake_rules):
    files({"broken.py": "bad_call(  # noqa\n"})
    assert " AMP000 " in cli("broken.py", "--output-format", "concise").stdout


def test_missing_path_reported_run_goes_on_exit_2(cli, with_ok_file):
    run = cli("foo.py", "ok.py", "--output-format", "concise")
    assert run.exit_code == 2
    assert run.report == GOOD_FINDING
    assert run.stderr.splitlines()[0] == "amplint: error: no such file or directory: foo.py"
    assert_no_traceback(run)


def test_missing_path_beats_exit_zero(cli, with_ok_file):
    assert cli("foo.py", "ok.py", "--exit-zero").exit_code == 2


def test_directory_without_python_files_warns_exit_0(cli, files):
    files({"docs/readme.md": "# hi\n"})
    run = cli("docs")
    assert run.exit_code == 0
    assert (run.stderr, run.summary) == ("amplint: warning: no Python files found in docs\n", "All checks passed!")


def test_unreadable_file(cli, files, with_ok_file, tmp_path, monkeypatch):
    secret = tmp_path / "secret.py"
    secret.write_text("bad_call()\n")
    secret.chmod(0)
    if os.geteuid() == 0:
        # root reads any file whatever its mode: make the read fail as it would for a user.
        import amplint.sourcefile

        real = amplint.sourcefile._read_all

        def read_all(path):
            if os.path.basename(path) == "secret.py":
                raise PermissionError(13, "Permission denied", str(path))
            return real(path)

        monkeypatch.setattr(amplint.sourcefile, "_read_all", read_all)
    try:
        run = cli(".", "--output-format", "concise", "--no-cache")
    finally:
        secret.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert run.exit_code == 1
    assert run.report == GOOD_FINDING
    assert (run.stderr, run.summary) == (
        "amplint: error: secret.py: permission denied\n",
        "Found 1 error (1 fixable with --fix). 1 file could not be checked.",
    )


def test_explicit_directory_named_like_a_file_is_walked(cli, files, fake_rules):
    files({"pkg.py/inner.py": "bad_call()\n"})
    run = cli("pkg.py", "--output-format", "concise")
    assert run.report == "pkg.py/inner.py:1:1: AMP991 [*] `bad_call` is not allowed\n"


def test_fifo_is_not_read(cli, files, with_ok_file, tmp_path):
    os.mkfifo(tmp_path / "pipe.py")  # a walk must not block on it
    run = cli(".", "--output-format", "concise", "--no-cache")
    assert run.report == GOOD_FINDING


def test_non_utf8_without_cookie(cli, files, with_ok_file, tmp_path):
    (tmp_path / "latin.py").write_bytes(b"bad_call()  # caf\xe9\n")
    run = cli(".", "--output-format", "concise")
    assert run.exit_code == 1
    assert run.report == GOOD_FINDING
    first = run.stderr.splitlines()[0]
    assert first.startswith("amplint: error: latin.py: ")
    assert len(run.stderr.splitlines()) == 1  # the error line; the summary is on stdout
    assert run.summary == "Found 1 error (1 fixable with --fix). 1 file could not be checked."
    assert_no_traceback(run)


def test_latin1_with_cookie_is_fine(cli, files, fake_rules, tmp_path):
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nbad_call()  # caf\xe9\n")
    run = cli("latin.py", "--fix")
    assert run.exit_code == 0, run
    assert (tmp_path / "latin.py").read_bytes() == b"# -*- coding: latin-1 -*-\ngood_call()  # caf\xe9\n"


def test_huge_file(cli, files, with_ok_file, tmp_path):
    (tmp_path / "huge.py").write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    run = cli(".", "--output-format", "concise")
    assert run.exit_code == 1
    assert run.report == GOOD_FINDING
    assert run.stderr.splitlines()[0].startswith("amplint: error: huge.py: file is too large to lint")


def test_internal_error_in_rule_exit_2_names_file_and_rule(cli, files, with_ok_file):
    files({"boom.py": "explode()\n"})
    run = cli(".", "--output-format", "concise", "--extend-select", "AMP994")
    assert run.exit_code == 2
    assert run.report == GOOD_FINDING  # the other rules and files still ran
    assert run.stderr.splitlines()[0] == "amplint: error: boom.py: internal error in rule AMP994: ValueError: boom"
    assert_no_traceback(run)


def test_internal_error_beats_exit_zero(cli, files, with_ok_file):
    files({"boom.py": "explode()\n"})
    assert cli(".", "--extend-select", "AMP994", "--exit-zero").exit_code == 2


def test_stdin_undecodable(cli):
    run = cli("-", input=b"x = '\xff'\n")
    assert run.exit_code == 1
    assert run.stderr.startswith("amplint: error: -: ")


def test_bad_input_in_a_real_process_has_no_traceback(amplint_exe, files, tmp_path):
    files({"broken.py": "import torch.cuda.amp\ndef f(:\n", "amplint.toml": ""})
    (tmp_path / "latin.py").write_bytes(b"import torch  # caf\xe9\n")
    run = amplint_exe("check", ".", "missing.py", "--output-format", "concise")
    assert run.exit_code == 2
    assert_no_traceback(run)
    assert "amplint: error: no such file or directory: missing.py" in run.stderr
    assert "amplint: error: latin.py: " in run.stderr
    assert run.stdout.startswith("broken.py:2:")
    assert " AMP000 SyntaxError: " in run.stdout


BOM = b"\xef\xbb\xbf"


@pytest.mark.parametrize("head, line", [
    (b"# coding: latin-1\n", 1),
    (b"#!/usr/bin/env python\n# -*- coding: latin-1 -*-\n", 2),
])
def test_bom_with_latin1_cookie_is_python_s_syntax_error_and_never_fixed(cli, files, fake_rules, tmp_path, head, line):
    data = BOM + head + b"bad_call()\n"
    (tmp_path / "bom.py").write_bytes(data)
    with pytest.raises(SyntaxError) as python:
        compile(data, "bom.py", "exec")
    run = cli("bom.py", "--output-format", "concise")
    assert run.exit_code == 1
    assert run.report == f"bom.py:{line}:1: AMP000 SyntaxError: {python.value.msg}\n"
    run = cli("bom.py", "--fix")
    assert run.exit_code == 1 and "AMP000" in run.stdout
    assert_no_traceback(run)
    assert (tmp_path / "bom.py").read_bytes() == data


def test_bom_with_utf8_cookie_is_linted_and_fixed(cli, files, fake_rules, tmp_path):
    (tmp_path / "bom.py").write_bytes(BOM + b"# coding: utf-8\nbad_call()\n")
    assert cli("bom.py", "--output-format", "concise").report == "bom.py:2:1: AMP991 [*] `bad_call` is not allowed\n"
    assert cli("bom.py", "--fix").exit_code == 0
    assert (tmp_path / "bom.py").read_bytes() == BOM + b"# coding: utf-8\ngood_call()\n"


def test_a_file_only_amplint_s_parser_rejects_is_not_linted_never_amp000(cli, files, with_ok_file, tmp_path):
    # CPython compiles 4,500 implicitly joined string literals; libcst's parser gives up on them.
    joined = "x = (\n" + "".join(f'    "s{i}"\n' for i in range(4500)) + ")\nbad_call()\n"
    compile(joined, "joined.py", "exec")
    (tmp_path / "joined.py").write_text(joined)
    run = cli(".", "--output-format", "concise")
    assert "AMP000" not in run.stdout
    assert run.report == GOOD_FINDING
    assert "joined.py: not linted: amplint's parser (libcst) cannot read this file, which Python accepts" in run.stderr
    assert "1 file could not be checked" in run.stderr + run.stdout
    assert_no_traceback(run)
