"""Where a notebook cell's code lies in the notebook's JSON file, character for character.

A notebook finding is located in its cell (``cell 3``, line 4, column 10), which is what a
person reads; a CI service (GitHub annotations, SARIF, GitLab Code Quality) can only show a
line of the file it was given, the ``.ipynb`` JSON. Each character of a cell's source is
written there inside a JSON string, possibly escaped (``\\"``, ``\\u00e9``), one source line
per string when the source is a list (nbformat's layout) or all of them in one string. This
module reads the JSON strings of each cell's ``source`` and maps every character of the cell
text to its offset in the file, so a cell position becomes the JSON file's line and column
of that very character. The decoding is checked against :mod:`json`'s: a file this module
reads differently gets no mapping rather than a wrong one.
"""

from __future__ import annotations

import bisect
import json
import re

from amplint.notebook_json import elements, source_spans

_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")


def _string_offsets(raw: str, start: int) -> tuple[str, list[int], int]:
    """The JSON string at ``raw[start]`` (its opening quote): the text it holds, the offset in
    ``raw`` where each of its characters is written, and the offset of its closing quote."""
    chars: list[str] = []
    offsets: list[int] = []
    at = start + 1
    while raw[at] != '"':
        offsets.append(at)
        if raw[at] != "\\":
            chars.append(raw[at])
            at += 1
            continue
        kind = raw[at + 1]
        if kind != "u":
            chars.append(_ESCAPES[kind])
            at += 2
            continue
        code, width = int(raw[at + 2 : at + 6], 16), 6
        if 0xD800 <= code < 0xDC00 and raw[at + 6 : at + 8] == "\\u":
            low = int(raw[at + 8 : at + 12], 16)
            if 0xDC00 <= low < 0xE000:  # one character written as a surrogate pair
                code, width = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00), 12
        chars.append(chr(code))
        at += width
    text = "".join(chars)
    if json.decoder.scanstring(raw, start + 1) != (text, at + 1):
        raise ValueError("a JSON string read differently from json's reading")
    return text, offsets, at


class _CellText:
    """One cell's source text and the file offset of each of its characters."""

    def __init__(self, raw: str, start: int) -> None:
        starts = [start] if raw[start] == '"' else list(elements(raw, start))
        text, self.offsets = "", []
        self.end = start  # where a position just past the last character is shown
        for element in starts:
            if raw[element] != '"':
                raise ValueError("a cell source element that is not a string")
            piece, offsets, closing = _string_offsets(raw, element)
            text += piece
            self.offsets += offsets
            self.end = closing
        # (start, length without its line ending) of each line of the cell's text
        self.lines: list[tuple[int, int]] = []
        at = 0
        for line in _LINES.findall(text)[:-1] or [""]:
            self.lines.append((at, len(line.rstrip("\r\n"))))
            at += len(line)
        self.length = len(text)

    def offset(self, row: int, column: int) -> int:
        """The file offset of the character at ``row``/``column`` of the cell (both from 1); a
        column past the end of its line is the line's end, never a place on the next line."""
        start, length = self.lines[min(max(row, 1), len(self.lines)) - 1]
        index = start + min(max(column, 1) - 1, length)
        return self.offsets[index] if index < self.length else self.end


class NotebookPositions:
    """Cell positions of one notebook as lines and columns (from 1) of its JSON text."""

    def __init__(self, raw: str) -> None:
        self.raw = raw
        self._cells = {index + 1: (raw, start) for index, (start, _) in source_spans(raw).items()}
        self._read: dict[int, _CellText | None] = {}
        self._line_starts = [0] + [match.end() for match in re.finditer("\n", raw)]

    def _cell(self, cell: int) -> _CellText | None:
        if cell not in self._read:
            try:
                self._read[cell] = _CellText(*self._cells[cell]) if cell in self._cells else None
            except (ValueError, IndexError, KeyError):
                self._read[cell] = None
        return self._read[cell]

    def file_position(self, cell: int, row: int, column: int) -> tuple[int, int] | None:
        """(line, column) in the JSON text of ``row``/``column`` of cell ``cell`` (from 1)."""
        text = self._cell(cell)
        if text is None:
            return None
        offset = text.offset(row, column)
        line = bisect.bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1

    def file_lines(self) -> list[str]:
        """The JSON text's lines, without their endings."""
        return [line.rstrip("\r") for line in self.raw.split("\n")]


def notebook_positions(raw: str) -> NotebookPositions | None:
    """The positions of ``raw``'s cells, or ``None`` if ``raw`` is not a notebook's JSON object."""
    try:
        return NotebookPositions(raw)
    except (ValueError, IndexError, KeyError):
        return None
