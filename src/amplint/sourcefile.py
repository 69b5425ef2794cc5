"""Reading user files: size and type checks, encoding (PEP 263 cookie, BOM), and encoding back.

Writing fixed files back is :mod:`amplint.fixwrite`.
"""

from __future__ import annotations

import codecs
import io
import os
import re
import stat
import tokenize
from dataclasses import dataclass
from pathlib import Path

# Files above this size are reported and skipped: nothing AMP-related is ever
# this large, and libcst would take minutes on generated code of that size.
MAX_FILE_BYTES = 5 * 1024 * 1024
# A notebook's JSON holds its outputs too (plots, images): the code limit applies to its cells.
MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024


# What ends a physical line for Python (str.splitlines also splits on form feeds and more).
LINE_BREAK = re.compile(r"\r\n|\r|\n")


def source_lines(text: str) -> list[str]:
    """Physical lines as Python counts them (not ``str.splitlines``, which also splits on form feeds)."""
    return LINE_BREAK.split(text)


# PEP 263: the declaration tokenize looks for on the first two lines.
_CODING_COOKIE = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


class SourceError(Exception):
    """A one-line, user-facing reason why a file cannot be linted."""


@dataclass(frozen=True)
class SourceText:
    """A file's decoded text, with the encoding and BOM it is written back with."""

    text: str
    encoding: str
    bom: bool


class EncodingSyntaxError(SourceError):
    """Python refuses the file before reading any code (a BOM with a non-UTF-8 cookie):
    ``msg`` is CPython's message, ``lineno`` the declaration's line."""

    def __init__(self, name: str, msg: str, lineno: int) -> None:
        super().__init__(f"{name}:{lineno}: SyntaxError: {msg}")
        self.msg = msg
        self.lineno = lineno


def _cookie_after_bom(payload: bytes) -> tuple[str, int] | None:
    """The encoding a BOM-marked file declares and the declaration's line, as CPython reads it:
    on line 1, or on line 2 below a comment or blank line."""
    lines = payload.decode("latin-1").splitlines()[:2]
    for lineno, line in enumerate(lines, start=1):
        match = _CODING_COOKIE.match(line)
        if match:
            return match.group(1), lineno
        if line.strip() and not line.lstrip(" \t\f").startswith("#"):
            return None
    return None


def _reject_bom_with_other_cookie(payload: bytes, name: str) -> None:
    cookie = _cookie_after_bom(payload)
    if cookie is None:
        return
    declared, lineno = cookie
    normal = tokenize._get_normal_name(declared)  # the spelling CPython's message uses
    if normal != "utf-8":
        # CPython: "encoding problem: iso-8859-1 with BOM"; tokenize's own message says utf-8.
        raise EncodingSyntaxError(name, f"encoding problem: {normal} with BOM", lineno)


def may_declare_encoding(data: bytes) -> bool:
    """The first two lines (as ``tokenize`` reads them: up to ``\n``) say ``coding``, as every
    encoding declaration does; without it the file is UTF-8."""
    first = data.find(b"\n")
    second = data.find(b"\n", first + 1) if first >= 0 else -1
    return b"coding" in (data if second < 0 else data[:second])


def decode_source(data: bytes, name: str) -> SourceText:
    bom = data.startswith(codecs.BOM_UTF8)
    try:
        # Most files declare nothing: their encoding is known without ``tokenize``'s reading.
        encoding = "utf-8" if not bom and not may_declare_encoding(data) else tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError as exc:
        if bom:
            _reject_bom_with_other_cookie(data[len(codecs.BOM_UTF8):], name)
        first_lines = data.decode("latin-1").splitlines()[:2]
        if any(_CODING_COOKIE.match(line) for line in first_lines):
            raise SourceError(f"{name}: invalid encoding declaration: {exc.msg}") from None
        # No declaration at all: the file is meant to be UTF-8 and is not; say where.
        encoding = "utf-8"
    payload = data[len(codecs.BOM_UTF8):] if bom else data
    if encoding == "utf-8-sig":
        encoding = "utf-8"
    try:
        text = payload.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        reason = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
        where = f" at byte {exc.start}" if isinstance(exc, UnicodeDecodeError) else ""
        raise SourceError(
            f"{name}: cannot decode as {encoding}{where} ({reason}); "
            "add a coding declaration or save the file as UTF-8"
        ) from None
    return SourceText(text=text, encoding=encoding, bom=bom)


def read_bytes_or_none(path: str | os.PathLike) -> bytes | None:
    """What :func:`read_bytes` reads, or ``None`` where it would raise: for the project pass,
    which reads files a rule may never report on, so without ``Path`` objects or messages."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def read_bytes(path: Path | str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file no larger than ``limit``; ``path`` as a string when the caller
    has one (every file of a run is read so: no ``Path`` to build, no buffered file object)."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            # Reading a FIFO or a device would block or never end.
            raise SourceError(f"{path}: not a regular file")
        size = info.st_size
        if size > limit:
            raise SourceError(f"{path}: file is too large to lint ({size // 1024} KiB > {limit // 1024} KiB)")
        return _read_all(path)
    except SourceError:
        raise
    except IsADirectoryError:
        raise SourceError(f"{path}: is a directory") from None
    except FileNotFoundError:
        raise SourceError(f"{path}: no such file") from None
    except PermissionError:
        raise SourceError(f"{path}: permission denied") from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _read_all(path: Path | str) -> bytes:
    with open(path, "rb", buffering=0) as handle:
        return handle.readall()


def read_source(path: Path) -> SourceText:
    return decode_source(read_bytes(path), str(path))


def encode_source(source: SourceText, text: str) -> bytes:
    data = text.encode(source.encoding)
    return codecs.BOM_UTF8 + data if source.bom else data
