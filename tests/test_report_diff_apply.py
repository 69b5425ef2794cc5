"""``--diff`` output applies, and applying it gives exactly what ``--fix`` writes.

Python ends a line at ``\\r\\n``, ``\\r`` or ``\\n``, git and ``patch`` only at ``\\n``, and
``str.splitlines`` also at form feeds, ``\\v``, ``\\x1c``-``\\x1e``, U+0085, U+2028 and U+2029.
A diff cut where git does not cut is rejected by ``git apply``, so each of those characters is
tried here, in comments and strings around lines that AMP001 rewrites, together with CRLF and
bare-CR files and files without a final newline.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amplint import fix_source
from amplint.report.diff import file_diff

ODD_BREAKS = {
    "form-feed": "\f",
    "vertical-tab": "\v",
    "file-separator": "\x1c",
    "group-separator": "\x1d",
    "record-separator": "\x1e",
    "next-line": "\x85",
    "line-separator": "\u2028",
    "paragraph-separator": "\u2029",
}
AUTOCAST = "with torch.cuda.amp.autocast():"
SCALER = "scaler = torch.cuda.amp.GradScaler()"


def program(odd: str = "", end: str = "\n", final: str = "\n") -> str:
    lines = [
        "import torch",
        f"# page{odd}break",
        f"s = 'x{odd}y'",
        AUTOCAST,
        "    pass",
        f't = "{odd}"  # {odd}',
        SCALER,
    ]
    return end.join(lines) + final


CASES = {
    **{name: program(char) for name, char in ODD_BREAKS.items()},
    "crlf": program("\f", end="\r\n", final="\r\n"),
    "bare-cr": program(end="\r", final="\r"),
    "mixed-endings": "import torch\r\nx = 1\r" + AUTOCAST + "\n    pass\r\n" + SCALER + "\r",
    "no-final-newline": program(final=""),
    "crlf-no-final-newline": program("\u2028", end="\r\n", final=""),
    "bare-cr-no-final-newline": program("\x1c", end="\r", final=""),
    "untouched-last-line-without-newline": "import torch\n" + SCALER + "\n# page\fbreak",
}

_ISOLATED_GIT = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
_ISOLATED_GIT.pop("AMPLINT_CACHE_DIR", None)


def _git(repo: Path, *args: str, patch: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.autocrlf=false", *args],
        cwd=repo, input=patch, capture_output=True, env=_ISOLATED_GIT, timeout=60,
    )


def _amplint(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    # A subprocess, not click's runner: its captured stdout turns "\r\n" into "\n".
    return subprocess.run([sys.executable, "-m", "amplint", "check", "--no-cache", *args],
                          cwd=cwd, capture_output=True, env=_ISOLATED_GIT, timeout=120)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("case", sorted(CASES))
def test_git_applies_the_diff_to_what_fix_writes(tmp_path, case):
    data = CASES[case].encode("utf-8")
    repo, fixed = tmp_path / "repo", tmp_path / "fixed"
    for root in (repo, fixed):
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / "train.py").write_bytes(data)
    assert _git(repo, "init", "-q").returncode == 0
    assert _git(repo, "add", "-A").returncode == 0
    assert _git(repo, "commit", "-qm", "original").returncode == 0

    diff = _amplint(repo, "--diff", "pkg/train.py")
    assert diff.returncode == 1 and diff.stdout, diff.stderr
    # The headers name the file as ruff's do, without git's a/ and b/ prefixes.
    check = _git(repo, "apply", "-p0", "--check", "-", patch=diff.stdout)
    assert check.returncode == 0, check.stderr.decode() + diff.stdout.decode()
    assert _git(repo, "apply", "-p0", "-", patch=diff.stdout).returncode == 0

    assert _amplint(fixed, "--fix", "pkg/train.py").returncode == 0
    after = (fixed / "pkg" / "train.py").read_bytes()
    assert after != data
    assert (repo / "pkg" / "train.py").read_bytes() == after


# --------------------------------------------------------------------------- in process

NO_NEWLINE = "\\ No newline at end of file\n"
_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")


def _lines_as_git_reads_them(text: str) -> list[str]:
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def apply_patch(original: str, patch: str) -> str:
    """What ``git apply`` makes of a one-file unified diff, strictly: any mismatch fails."""
    if not patch:
        return original
    old, lines = _lines_as_git_reads_them(original), _lines_as_git_reads_them(patch)
    assert lines[0].startswith("--- ") and lines[1].startswith("+++ ")
    out: list[str] = []
    pos, i = 0, 2
    while i < len(lines):
        hunk = _HUNK.match(lines[i])
        assert hunk and lines[i].endswith("@@\n"), lines[i]
        start = int(hunk[1]) - (1 if hunk[2] != "0" else 0)
        assert start >= pos
        out += old[pos:start]
        pos, i = start, i + 1
        while i < len(lines) and not lines[i].startswith("@@ "):
            tag, body = lines[i][0], lines[i][1:]
            i += 1
            if i < len(lines) and lines[i] == NO_NEWLINE:
                assert body.endswith("\n")
                body, i = body[:-1], i + 1
            assert tag in " -+", lines[i - 1]
            if tag in " -":
                assert old[pos] == body
                pos += 1
            if tag in " +":
                out.append(body)
    return "".join(out + old[pos:])


def test_apply_patch_reads_what_git_writes():
    original = "a\nb\fc\nd"
    patch = "--- t.py\n+++ t.py\n@@ -1,3 +1,3 @@\n a\n-b\fc\n+B\fc\n-d\n\\ No newline at end of file\n+d\n"
    assert apply_patch(original, patch) == "a\nB\fc\nd\n"


_PIECES = st.sampled_from([
    f"{AUTOCAST}{{end}}    pass",
    SCALER,
    "x = 1",
    "# {odd}",
    "s = '{odd}'",
    "t = '''a{odd}{end}b'''",
])


@st.composite
def sources(draw) -> str:
    pieces = draw(st.lists(_PIECES, min_size=1, max_size=6))
    ends = st.sampled_from(["\n", "\r\n", "\r"])
    odd = st.sampled_from([*ODD_BREAKS.values(), ""])
    text = "import torch" + draw(ends)
    for piece in pieces:
        text += piece.format(odd=draw(odd), end=draw(ends)) + draw(ends)
    return text if draw(st.booleans()) else text.rstrip("\r\n")


@settings(max_examples=60, deadline=None)
@given(sources())
def test_applying_the_diff_gives_the_fixed_source(source):
    fixed = fix_source(source, "t.py")
    patch = file_diff("t.py", source, fixed)
    assert apply_patch(source, patch) == fixed
