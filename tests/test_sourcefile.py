"""Decoding a file: the encoding read without ``tokenize`` (no ``coding`` on the first two lines)
is the one ``tokenize`` reads, and a file that cannot be decoded fails as it did."""

from __future__ import annotations

import codecs
import io
import tokenize

import pytest

from amplint.sourcefile import SourceError, decode_source

CASES = [
    b"import torch\n",
    b"",
    b"\n\n\n",
    "x = 'caf\u00e9'\n".encode(),
    "# caf\u00e9\nimport torch\n".encode(),
    b"# -*- coding: latin-1 -*-\nx = '\xe9'\n",
    b"#!/usr/bin/env python\n# coding: latin-1\nx = '\xe9'\n",
    b"\n\n# coding: latin-1\nx = 1\n",  # third line: not a declaration
    b"x = 1\r# coding: latin-1\rx = '\xe9'\r",  # one line for tokenize: its comment is not first
    b"# coding: latin-1\r\nx = '\xe9'\r\n",
    b"x = '\xe9'\n",  # not UTF-8, no declaration
    b"# \xe9\nx = 1\n",
    b"# decoding things\nx = 1\n",  # says coding, declares nothing
    b"# coding: no-such-codec\nx = 1\n",
    codecs.BOM_UTF8 + b"x = 1\n",
    codecs.BOM_UTF8 + b"# coding: utf-8\nx = 1\n",
    codecs.BOM_UTF8 + b"# coding: latin-1\nx = 1\n",
    "# x\n".encode() + b"y = '\xff'\n",
]


def _by_tokenize(data: bytes) -> str | None:
    """The encoding ``tokenize`` detects (``utf-8`` for a BOM), ``None`` where it refuses."""
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError:
        return None
    return "utf-8" if encoding == "utf-8-sig" else encoding


@pytest.mark.parametrize("data", CASES, ids=range(len(CASES)))
def test_the_encoding_is_the_one_tokenize_detects(data):
    expected = _by_tokenize(data)
    try:
        source = decode_source(data, "a.py")
    except SourceError as exc:
        payload = data[3:] if data.startswith(codecs.BOM_UTF8) else data
        # Refused: tokenize refuses too, or the payload is not valid in what it detects.
        if expected is not None:
            with pytest.raises((UnicodeDecodeError, LookupError)):
                payload.decode(expected)
        assert "a.py" in str(exc)
        return
    if expected is not None:
        assert source.encoding == expected
    else:
        assert source.encoding == "utf-8"  # tokenize refused an undeclared line: read as UTF-8
    assert source.bom == data.startswith(codecs.BOM_UTF8)


def test_a_file_that_is_not_utf8_and_declares_nothing_says_where_it_fails():
    with pytest.raises(SourceError, match=r"cannot decode as utf-8 at byte 5"):
        decode_source(b"x = '\xe9'\n", "a.py")
