"""Unified diffs of what ``--fix`` would write (``--diff``)."""

from __future__ import annotations

import difflib
from typing import Iterable

from amplint.model import FileResult


def file_diff(filename: str, before: str, after: str) -> str:
    lines = []
    for line in difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), fromfile=filename, tofile=filename
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
