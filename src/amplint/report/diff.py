"""Unified diffs of what ``--fix`` would write (``--diff``)."""

from __future__ import annotations

import difflib
from typing import Iterable

from amplint.model import FileResult
from amplint.report.escape import path_text, terminal


def file_diff(filename: str, before: str, after: str) -> str:
    # The header is one line naming the file, whatever characters the name holds; the hunks
    # stay byte-exact so that the diff still applies.
    header = terminal(path_text(filename))
    lines = []
    for line in difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), fromfile=header, tofile=header
    ):
        lines.append(line)
        if not line.endswith("\n"):
            lines.append("\n\\ No newline at end of file\n")
    return "".join(lines)


def render_diffs(results: Iterable[FileResult]) -> str:
    chunks = []
    for result in results:
        if result.changed:
            chunks.append(file_diff(result.filename, result.original_source or "", result.source or ""))
    return "\n".join(chunks)
