"""Cell sources put back into a notebook's JSON text without re-serialising the rest.

Re-serialising the whole notebook reproduces it only when its layout is one ``json.dumps``
writes (nbformat's, and a few others); a notebook written by another tool (``1.0e-5`` in its
metadata, a different indentation of its outputs) would come back with bytes changed outside
the cells amplint edited, so it used to be refused. Here only the ``source`` value of each
edited cell is replaced, in the layout that value had, and everything else is left as it was.
"""

from __future__ import annotations

import json
import re

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class _Layout(ValueError):
    """The text is not the JSON object of cells this module expects."""


def source_spans(raw: str) -> dict[int, tuple[int, int]]:
    """Where each cell's ``source`` value lies in ``raw``: cell index -> (start, end)."""
    spans: dict[int, tuple[int, int]] = {}
    for key, start, end in _members(raw, _skip(raw, 0)):
        if key == "cells":
            for index, cell_start in enumerate(elements(raw, start)):
                for cell_key, value_start, value_end in _members(raw, cell_start):
                    if cell_key == "source":
                        spans[index] = (value_start, value_end)
    return spans


def splice_sources(raw: str, sources: dict[int, list[str] | str]) -> str | None:
    """``raw`` with the ``source`` of each cell in ``sources`` replaced; ``None`` if it cannot be done
    so that the result loads as the same notebook with exactly those sources changed."""
    try:
        spans = source_spans(raw)
    except (_Layout, ValueError, IndexError):
        return None
    if not set(sources) <= set(spans):
        return None
    ascii_only = raw.isascii()
    pieces, last = [], 0
    for index in sorted(sources):
        start, end = spans[index]
        pieces += [raw[last:start], _dumps_in_layout(sources[index], raw, start, end, ascii_only)]
        last = end
    spliced = "".join(pieces) + raw[last:]
    expected = json.loads(raw)
    for index, source in sources.items():
        expected["cells"][index]["source"] = source
    return spliced if json.loads(spliced) == expected else None


def _dumps_in_layout(source: list[str] | str, raw: str, start: int, end: int, ascii_only: bool) -> str:
    """``source`` as JSON, laid out as the value at ``raw[start:end]`` was: one line, or one
    element a line with that value's indentation and line ending."""
    if isinstance(source, str) or "\n" not in raw[start:end] or not source:
        return json.dumps(source, ensure_ascii=ascii_only)
    old = raw[start:end]
    newline = "\r\n" if "\r\n" in old else "\n"
    element_indent = re.match(r"\[[ \t]*\r?\n([ \t]*)", old)
    closing_indent = re.search(r"\n([ \t]*)\]$", old)
    inner = element_indent.group(1) if element_indent else ""
    outer = closing_indent.group(1) if closing_indent else ""
    # A line the edit left as it was keeps the very text it had (its escapes too), so that the
    # bytes change only in the lines that did.
    written = {}
    for element in elements(raw, start):
        line, element_end = _DECODER.raw_decode(raw, element)
        if isinstance(line, str):
            written.setdefault(line, raw[element:element_end])
    items = [written.get(line) or json.dumps(line, ensure_ascii=ascii_only) for line in source]
    return "[" + newline + ("," + newline).join(inner + item for item in items) + newline + outer + "]"


def _skip(text: str, at: int) -> int:
    return _WHITESPACE.match(text, at).end()


def _members(text: str, at: int):
    """(key, value start, value end) of each member of the object at ``at``."""
    if text[at] != "{":
        raise _Layout
    at = _skip(text, at + 1)
    if text[at] == "}":
        return
    while True:
        key, at = json.decoder.scanstring(text, at + 1) if text[at] == '"' else (None, None)
        if key is None:
            raise _Layout
        at = _skip(text, at)
        if text[at] != ":":
            raise _Layout
        start = _skip(text, at + 1)
        _, end = _DECODER.raw_decode(text, start)
        yield key, start, end
        at = _skip(text, end)
        if text[at] == "}":
            return
        if text[at] != ",":
            raise _Layout
        at = _skip(text, at + 1)


def elements(text: str, at: int):
    """The start of each element of the array at ``at``."""
    if text[at] != "[":
        raise _Layout
    at = _skip(text, at + 1)
    if text[at] == "]":
        return
    while True:
        _, end = _DECODER.raw_decode(text, at)
        yield at
        at = _skip(text, end)
        if text[at] == "]":
            return
        if text[at] != ",":
            raise _Layout
        at = _skip(text, at + 1)
