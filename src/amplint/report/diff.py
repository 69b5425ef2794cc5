"""Unified diffs of what ``--fix`` would write (``--diff``): for a Python file in the form
``git apply`` takes; for a notebook one diff of source per changed code cell, headed
``--- train.ipynb:cell 3`` as ruff prints it, since a diff of the JSON text (escaped quotes,
``"\\n",`` at each line's end) is hard to read and no tool applies it either."""

from __future__ import annotations

import difflib
import json
import re
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


_CELL_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")


def _code_cells(notebook_json: str) -> dict[int, str]:
    """Each code cell's source, by its number (from 1, counting every cell, as findings do)."""
    cells = json.loads(notebook_json).get("cells", [])
    return {
        number: "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for number, cell in enumerate(cells, start=1)
        if isinstance(cell, dict) and cell.get("cell_type") == "code" and "source" in cell
    }


def _cell_lines(source: str) -> list[str]:
    """The cell's lines as printed: every one ends in ``\\n`` (ruff marks no missing final newline)
    and shows its controlling characters, as a finding's source line does."""
    lines = _CELL_LINES.findall(source)
    if lines and lines[-1] == "":
        lines.pop()
    return [terminal(line.rstrip("\r\n")) + "\n" for line in lines]


def notebook_diff(filename: str, before: str, after: str) -> str:
    """The source diff of each code cell that differs between two versions of a notebook's JSON."""
    name = terminal(path_text(filename))
    old, new = _code_cells(before), _code_cells(after)
    chunks = []
    for number in sorted(old.keys() & new.keys()):
        header = f"{name}:cell {number}"
        chunks.extend(difflib.unified_diff(_cell_lines(old[number]), _cell_lines(new[number]), fromfile=header, tofile=header))
    return "".join(chunks)


def render_diffs(results: Iterable[FileResult]) -> str:
    chunks = []
    for result in results:
        if result.changed:
            show = notebook_diff if result.cell_sources is not None else file_diff
            chunks.append(show(result.filename, result.original_source or "", result.source or ""))
    return "\n".join(chunks)
