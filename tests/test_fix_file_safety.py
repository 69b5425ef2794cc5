"""`--fix` writes the user's file, the whole file and nothing but the fix.

Byte-exact line endings and encodings; the file object kept (symlink target, hard link,
owner, mode, extended attributes); read-only files and directories reported with nothing
written; an edit made while the fix was computed wins; a fix the running Python cannot
parse is not written.

The tests run as root. Read-only modes are honoured even for root, so those cases run
directly; where only an unprivileged user fails (a directory it may not write, a group it
is not in) the CLI runs in a forked child that has dropped to ``nobody`` with os.setuid.
"""

from __future__ import annotations

import codecs
import os
import stat
import tempfile
from pathlib import Path

import pytest

import amplint
import amplint.engine
import amplint.jobs
from as_nobody import NOBODY, as_nobody

FIXABLE = b"bad_call()"
FIXED = b"good_call()"


def fix(cli, name: str):
    return cli(name, "--fix", "--no-cache", "--output-format", "concise")


# --------------------------------------------------------------------------- bytes kept


@pytest.mark.parametrize(
    "original",
    [
        pytest.param(b"x = 1\r\nbad_call()\r\ny = 2\r\n", id="crlf"),
        pytest.param(b"x = 1\r\nbad_call()\ny = 2\r\n\n", id="mixed-endings"),
        pytest.param(b"x = 1\rbad_call()\ry = 2\r", id="bare-cr"),
        pytest.param(b"x = 1\rbad_call()\r", id="bare-cr-fix-on-last-line"),
        pytest.param(codecs.BOM_UTF8 + b"x = '\xc3\xa9'\nbad_call()\n", id="utf8-bom"),
        pytest.param(b"# -*- coding: latin-1 -*-\nx = '\xe9'\nbad_call()  # caf\xe9\n", id="latin1-cookie"),
        pytest.param(b"if True:\n\tbad_call()\n\tx = '\t'\n", id="tabs"),
        pytest.param(b"x = 1\n\x0c\ndef f():\n    bad_call()\n\x0c# page\n", id="form-feeds"),
        pytest.param(b"x = 1\nbad_call()", id="no-trailing-newline"),
        pytest.param(b"x = 1\r\nbad_call()", id="crlf-no-trailing-newline"),
    ],
)
def test_fix_changes_only_the_fixed_text(cli, tmp_path, fake_rules, original):
    path = tmp_path / "a.py"
    path.write_bytes(original)
    run = fix(cli, "a.py")
    assert run.exit_code == 0, run
    assert path.read_bytes() == original.replace(FIXABLE, FIXED)
    again = fix(cli, "a.py")  # converged: a second run changes nothing
    assert again.exit_code == 0 and path.read_bytes() == original.replace(FIXABLE, FIXED)


def test_nul_byte_file_is_reported_and_not_rewritten(cli, tmp_path, fake_rules):
    # CPython rejects a source with NUL bytes (libcst does not): AMP000, and nothing written.
    path = tmp_path / "a.py"
    original = b"bad_call()  # \x00 nul\n"
    path.write_bytes(original)
    run = fix(cli, "a.py")
    assert path.read_bytes() == original
    assert run.exit_code == 1 and " AMP000 " in run.stdout


def test_bare_cr_file_keeps_its_final_cr_with_a_real_rule(cli, tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(b"import torch\rwith torch.cuda.amp.autocast():\r    pass\r")
    assert fix(cli, "a.py").exit_code == 0
    assert path.read_bytes() == b'import torch\rwith torch.amp.autocast("cuda"):\r    pass\r'


def test_fix_source_keeps_a_final_cr():
    assert amplint.fix_source("import torch\rs = torch.cuda.amp.GradScaler()\r").endswith(")\r")


# --------------------------------------------------------------------------- fixes the running Python rejects


@pytest.mark.parametrize(
    "code",
    [
        'import torch\nx = f"{torch.is_autocast_enabled()}"\n',
        'import torch\nx = f"{torch.cuda.amp.GradScaler()}"\n',
        'import torch\nx = f"{torch.cuda.amp.autocast()}"\n',
    ],
)
def test_fix_inside_an_f_string_is_not_written_when_python_rejects_it(cli, tmp_path, code):
    # On Python 3.11 the rewrite nests the same quote inside the f-string, which only
    # 3.12 accepts; libcst accepts it on every version.
    import ast

    path = tmp_path / "a.py"
    path.write_text(code)
    fix(cli, "a.py")
    fixed = path.read_text()
    ast.parse(fixed)
    assert fixed == code or '"cuda"' in fixed
    ast.parse(amplint.fix_source(code))


def test_fix_outside_an_f_string_still_applies(cli, tmp_path):
    path = tmp_path / "a.py"
    path.write_text("import torch\nx = torch.is_autocast_enabled()\n")
    assert fix(cli, "a.py").exit_code == 0
    assert path.read_text() == 'import torch\nx = torch.is_autocast_enabled("cuda")\n'


# --------------------------------------------------------------------------- the file object kept


def test_symlink_target_is_fixed_and_the_link_stays_a_link(cli, tmp_path, fake_rules):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "a.py"
    target.write_bytes(b"bad_call()\n")
    link = tmp_path / "link.py"
    link.symlink_to(Path("real") / "a.py")
    run = fix(cli, "link.py")
    assert run.exit_code == 0, run
    assert link.is_symlink() and os.readlink(link) == os.path.join("real", "a.py")
    assert target.read_bytes() == b"good_call()\n"
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["a.py"]


def test_symlink_found_by_walking_a_directory(cli, tmp_path, fake_rules):
    (tmp_path / "elsewhere.txt").write_bytes(b"bad_call()\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").symlink_to(tmp_path / "elsewhere.txt")
    assert fix(cli, "pkg").exit_code == 0
    assert (tmp_path / "pkg" / "a.py").is_symlink()
    assert (tmp_path / "elsewhere.txt").read_bytes() == b"good_call()\n"


def test_every_name_of_a_hard_link_sees_the_fix(cli, tmp_path, fake_rules):
    first = tmp_path / "a.py"
    first.write_bytes(b"bad_call()\n")
    second = tmp_path / "b_other_name.txt"
    os.link(first, second)
    inode = first.stat().st_ino
    assert fix(cli, "a.py").exit_code == 0
    assert first.read_bytes() == second.read_bytes() == b"good_call()\n"
    assert first.stat().st_ino == second.stat().st_ino == inode
    assert first.stat().st_nlink == 2


def test_mode_owner_and_extended_attributes_are_kept(cli, tmp_path, fake_rules):
    path = tmp_path / "a.py"
    path.write_bytes(b"bad_call()\n")
    path.chmod(0o751)
    os.setxattr(path, "user.origin", b"checked-out")
    owner = (NOBODY, NOBODY) if os.geteuid() == 0 else (os.getuid(), os.getgid())
    os.chown(path, *owner)
    assert fix(cli, "a.py").exit_code == 0
    info = path.stat()
    assert path.read_bytes() == b"good_call()\n"
    assert stat.S_IMODE(info.st_mode) == 0o751
    assert (info.st_uid, info.st_gid) == owner
    assert os.getxattr(path, "user.origin") == b"checked-out"


def test_read_only_file_is_reported_and_not_written(cli, tmp_path, fake_rules):
    path = tmp_path / "a.py"
    path.write_bytes(b"bad_call()\n")
    path.chmod(0o444)
    run = fix(cli, "a.py")
    assert path.read_bytes() == b"bad_call()\n"
    assert run.exit_code == 1
    assert run.report == "a.py:1:1: AMP991 [*] `bad_call` is not allowed\n"
    assert (run.stderr, run.summary) == (
        "amplint: warning: a.py: file is read-only, fixes not written\n",
        "Found 1 error (1 fixable with --fix).",
    )


def test_read_only_directory_is_reported_and_nothing_written(cli, tmp_path, fake_rules):
    (tmp_path / "ro").mkdir()
    path = tmp_path / "ro" / "a.py"
    path.write_bytes(b"bad_call()\n")
    (tmp_path / "ro").chmod(0o555)
    try:
        run = fix(cli, "ro/a.py")
    finally:
        (tmp_path / "ro").chmod(0o755)
    assert path.read_bytes() == b"bad_call()\n"
    assert sorted(p.name for p in (tmp_path / "ro").iterdir()) == ["a.py"]
    assert run.exit_code == 1
    assert "Fixed" not in run.stderr
    assert (run.stderr, run.summary) == (
        "amplint: warning: ro/a.py: directory ro is read-only, fixes not written\n",
        "Found 1 error (1 fixable with --fix).",
    )


# ----------------------------------------------------------------- as an unprivileged user


def _fix_in(directory: str, name: str):
    from click.testing import CliRunner

    from amplint.cli.main import main_group

    before = os.getcwd()
    os.chdir(directory)
    try:
        result = CliRunner().invoke(main_group, [name, "--fix", "--no-cache", "--output-format", "concise"])
    finally:
        os.chdir(before)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def shared_dir(fake_rules):
    """A folder outside root's private tmp dir, so that ``nobody`` can reach it."""
    directory = Path(tempfile.mkdtemp(prefix="amplint-safety-"))
    directory.chmod(0o755)
    # Import everything a run needs while still root: the interpreter's own files may not be
    # readable by nobody.
    (directory / "warm.py").write_bytes(b"bad_call()\n")
    _fix_in(str(directory), "warm.py")
    (directory / "warm.py").unlink()
    yield directory
    import shutil

    shutil.rmtree(directory, ignore_errors=True)


def test_directory_the_user_cannot_write_is_reported(shared_dir):
    path = shared_dir / "a.py"
    path.write_bytes(b"bad_call()\n")
    os.chown(path, NOBODY, NOBODY)  # nobody may write the file, not the folder (root's, 0755)
    code, stdout, stderr = as_nobody(_fix_in, str(shared_dir), "a.py")
    assert path.read_bytes() == b"bad_call()\n"
    assert code == 1 and "Fixed" not in stderr
    assert stderr.startswith(f"amplint: warning: a.py: directory {shared_dir} is read-only, fixes not written\n")


def test_group_the_user_may_not_give_is_kept_by_writing_in_place(shared_dir):
    # nobody owns the file and the folder but is not in group root: a replacement file could
    # not carry that group, so the content is rewritten in place.
    os.chown(shared_dir, NOBODY, NOBODY)
    path = shared_dir / "a.py"
    path.write_bytes(b"bad_call()\n")
    os.chown(path, NOBODY, 0)
    path.chmod(0o664)
    code, stdout, stderr = as_nobody(_fix_in, str(shared_dir), "a.py")
    assert (code, stdout, stderr) == (0, "Found 1 error (1 fixed, 0 remaining).\n", "")
    assert path.read_bytes() == b"good_call()\n"
    assert (path.stat().st_uid, path.stat().st_gid) == (NOBODY, 0)
    assert stat.S_IMODE(path.stat().st_mode) == 0o664


# --------------------------------------------------------------------------- an edit made meanwhile


@pytest.mark.parametrize("hard_linked", [False, True], ids=["replaced", "rewritten-in-place"])
def test_file_changed_between_read_and_write_is_not_overwritten(cli, tmp_path, fake_rules, monkeypatch, hard_linked):
    path = tmp_path / "a.py"
    path.write_bytes(b"bad_call()\n")
    if hard_linked:
        os.link(path, tmp_path / "other_name")
    real_lint_text = amplint.engine.lint_text
    edits = []

    def lint_then_edit(*args, **kwargs):
        result = real_lint_text(*args, **kwargs)
        if not edits:  # the user saves the file while amplint computes the fix
            with open(path, "ab") as handle:
                handle.write(b"user_line = 1\n")
            edits.append(True)
        return result

    monkeypatch.setattr(amplint.jobs, "lint_text", lint_then_edit)
    run = fix(cli, "a.py")
    assert path.read_bytes() == b"bad_call()\nuser_line = 1\n"
    assert run.exit_code == 1
    assert run.stderr.splitlines()[0] == (
        "amplint: warning: a.py: changed on disk while it was being fixed; fixes not written, run again"
    )
    assert "Fixed" not in run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["a.py"] + (["other_name"] if hard_linked else []))


def test_no_temporary_file_is_left_after_a_fix(cli, tmp_path, fake_rules):
    for index in range(5):
        (tmp_path / f"m{index}.py").write_bytes(b"bad_call()\n")
    assert cli(".", "--fix", "--no-cache").exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"m{index}.py" for index in range(5)]
