"""The one converter between amplint's positions and LSP's, for one text and one encoding.

Line ends: LSP ends a line only at ``\\r\\n``, ``\\r`` or ``\\n``. Python's tokenizer ends
physical lines at the same three, so amplint's row N (1-based) is LSP line N - 1. Nothing here
uses ``str.splitlines`` (nor pygls' ``TextDocument.lines``, built on it): it also breaks at
``\\v``, ``\\f``, ``\\x1c``-``\\x1e``, ``\\x85``, U+2028 and U+2029, which would shift every
line after one of them.

Columns: amplint counts 1-based code points; LSP counts 0-based units of the position encoding
negotiated at ``initialize`` (pygls picks the first of the client's
``general.positionEncodings`` it supports, else UTF-16): ``utf-8`` bytes, ``utf-16`` code units
(an emoji is two) or ``utf-32`` code points. An unknown encoding is read as UTF-16, the LSP
default.

Out of range: a column past the end of its line means the line's end, before its line end (as
the LSP spec says for characters); a line past the last one means the end of the text; a
character that falls inside a multi-unit character means that character's start.
"""

from __future__ import annotations

import bisect
import re

from lsprotocol import types

from amplint.model import Location

LINE_END = re.compile(r"\r\n|\r|\n")
UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def _utf8_width(char: str) -> int:
    code = ord(char)
    return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4


def _utf16_width(char: str) -> int:
    return 2 if ord(char) > 0xFFFF else 1


_WIDTHS = {UTF8: _utf8_width, UTF16: _utf16_width, UTF32: lambda char: 1}


def encoding_name(encoding: object) -> str:
    """``utf-8``, ``utf-16`` or ``utf-32`` for a negotiated encoding (a ``PositionEncodingKind`` or its value)."""
    name = str(getattr(encoding, "value", encoding))
    return name if name in _WIDTHS else UTF16


class LspPositions:
    """Positions in ``text`` as an LSP client with ``encoding`` counts them."""

    def __init__(self, text: str, encoding: object = UTF16) -> None:
        self.text = text
        self.encoding = encoding_name(encoding)
        self._width = _WIDTHS[self.encoding]
        ends = list(LINE_END.finditer(text))
        self.line_starts = [0] + [end.end() for end in ends]
        # Where each line's content stops, before its line end (the last line has none).
        self._content_ends = [end.start() for end in ends] + [len(text)]

    def _units(self, start: int, stop: int) -> int:
        if self.encoding == UTF32:
            return stop - start
        return sum(map(self._width, self.text[start:stop]))

    def _end(self) -> types.Position:
        last = len(self.line_starts) - 1
        return types.Position(line=last, character=self._units(self.line_starts[last], len(self.text)))

    def position(self, location: Location) -> types.Position:
        """The LSP position of amplint's 1-based row and code-point column."""
        line = max(location.row - 1, 0)
        if line >= len(self.line_starts):
            return self._end()
        start, stop = self.line_starts[line], self._content_ends[line]
        return types.Position(line=line, character=self._units(start, min(start + max(location.column - 1, 0), stop)))

    def range(self, start: Location, end: Location) -> types.Range:
        return types.Range(start=self.position(start), end=self.position(end))

    def position_at(self, offset: int) -> types.Position:
        """The LSP position of a code-point offset into the text."""
        offset = min(max(offset, 0), len(self.text))
        line = bisect.bisect_right(self.line_starts, offset) - 1
        start = self.line_starts[line]
        return types.Position(line=line, character=self._units(start, min(offset, self._content_ends[line])))

    def offset(self, position: types.Position) -> int:
        """The code-point offset into the text of an LSP position (as a client sends it)."""
        if position.line >= len(self.line_starts):
            return len(self.text)
        start, stop = self.line_starts[position.line], self._content_ends[position.line]
        if self.encoding == UTF32:
            return min(start + position.character, stop)
        used = 0
        for offset in range(start, stop):
            used += self._width(self.text[offset])
            if used > position.character:
                return offset
        return stop

    def replace(self, range: types.Range, new_text: str) -> str:
        """The text with ``range`` (in this encoding) replaced: a ranged ``didChange``."""
        start, end = self.offset(range.start), self.offset(range.end)
        return self.text[:start] + new_text + self.text[max(start, end):]
