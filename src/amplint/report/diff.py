"""Unified diffs of what ``--fix`` would write (``--diff``), in the form ``git apply`` takes."""

from __future__ import annotations

import difflib
from typing import Iterable

from amplint.model import FileResult
from amplint.report.escape import path_text, terminal

NO_NEWLINE = "\\ No newline at end of file\n"


def patch_lines(text: str) -> list[str]:
    """``text`` cut after each ``\\n``, every ending kept as it is.

    A patch line can only end at ``\\n``: ``git apply`` and ``patch`` read a form feed, ``\\v``,
    ``\\x1c``-``\\x1e``, U+0085, U+2028 or U+2029 (where ``str.splitlines`` would cut) as part of
    the line, and the ``\\r`` of ``\\r\\n`` as its last character. A bare ``\\r``, which ends a
    line for Python, stays inside the patch line: the hunk then carries it byte for byte.
    """
    lines = text.split("\n")
    last = lines.pop()
    lines = [line + "\n" for line in lines]
    if last:
        lines.append(last)
    return lines


def file_diff(filename: str, before: str, after: str) -> str:
    # The header is one line naming the file, whatever characters the name holds; the hunks
    # stay byte-exact so that the diff still applies.
    header = terminal(path_text(filename))
    lines = []
    for line in difflib.unified_diff(patch_lines(before), patch_lines(after), fromfile=header, tofile=header):
        lines.append(line)
        if not line.endswith("\n"):
            # Only the last line of a file can lack its "\n"; git marks it on a line of its own.
            lines.append("\n" + NO_NEWLINE)
    return "".join(lines)


def render_diffs(results: Iterable[FileResult]) -> str:
    chunks = []
    for result in results:
        if result.changed:
            chunks.append(file_diff(result.filename, result.original_source or "", result.source or ""))
    return "\n".join(chunks)
