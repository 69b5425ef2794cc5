"""Making file names, messages and source text safe for where a report is written.

A file name or a source line is data an attacker may control: a string literal can hold
``ESC [2J`` or a bare ``::error::`` line, a file may be called ``a\\r\\n::error::x.py``, and a
file name need not be valid UTF-8 at all (Python hands such names over with each bad byte as
a lone surrogate, U+DC80-U+DCFF, which a strict UTF-8 stream refuses to write).

- :func:`path_text` turns a file name into text that every encoder accepts.
- :func:`terminal` makes text inert on a terminal or in a CI log: no character that moves the
  cursor, starts a control sequence, ends the line or reorders what follows.
- :func:`dumps` writes JSON whose value is exact but whose bytes carry no such character.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing itself is not imported: a clean run does not need it
if TYPE_CHECKING:
    from typing import Any

# Invisible or controlling characters a terminal or log viewer may act upon: C0 controls
# (tab aside), DEL, C1 controls (U+009B is a one-character CSI), the Unicode format characters
# (bidi overrides and isolates such as U+202E, zero-width characters, the BOM), the line and
# paragraph separators, and surrogates (undecodable bytes of a file name).
_UNSAFE = (
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f]"
)
# json.dumps already escapes C0 controls inside strings; outside them only its own newlines
# and spaces appear, which must stay.
_UNSAFE_IN_JSON = "[" + _UNSAFE[1:].replace("\x00-\x08\x0a-\x1f", "", 1)
_ESCAPED_BYTE = "[\udc80-\udcff]"
_LONE_SURROGATE = "[\ud800-\udfff]"
# The patterns stay text, compiled (and kept in ``re``'s cache) on first use: a run that prints
# "All checks passed!" never needs them.


def _escaped_byte(match: re.Match) -> str:
    return f"\\x{ord(match.group()) - 0xDC00:02x}"


def path_text(name: str) -> str:
    """A file name with each byte that was not UTF-8 shown as ``\\xNN`` (``b\\xff.py``)."""
    if not re.search(_LONE_SURROGATE, name):
        return name
    name = re.sub(_ESCAPED_BYTE, _escaped_byte, name)
    return re.sub(_LONE_SURROGATE, lambda m: f"\\u{ord(m.group()):04x}", name)


def _visible(match: re.Match) -> str:
    char = match.group()
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)  # the Unicode "control picture" of the character: one cell wide
    if code == 0x7F:
        return "\u2421"
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _visible_but_line_breaks(match: re.Match) -> str:
    return match.group() if match.group() in "\r\n" else _visible(match)


def terminal(text: str, *, keep_line_breaks: bool = False) -> str:
    """``text`` with every controlling character made visible, so it prints on one line as is.

    ``keep_line_breaks`` leaves ``\\r`` and ``\\n`` to a format that encodes them itself: a CI
    logging command writes them as ``%0D``/``%0A``, which the runner decodes back into the
    annotation, so there they stay exact instead of turning into pictures.
    """
    if not re.search(_UNSAFE, text):
        return text
    return re.sub(_UNSAFE, _visible_but_line_breaks if keep_line_breaks else _visible, text)


def _json_escape(match: re.Match) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\\\x{code - 0xDC00:02x}"  # JSON for the text ``\xNN``, as path_text shows it
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"  # a lone surrogate escape is rejected by strict JSON parsers
    return f"\\u{code:04x}" if code <= 0xFFFF else _json_pair(code)


def _json_pair(code: int) -> str:
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def dumps(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` that keeps readable Unicode but escapes every controlling character.

    The decoded value is the same; only the bytes change, so a report shown on a terminal or
    in a log cannot drive it, and a file name with undecodable bytes still gives valid UTF-8.
    """
    import json  # only the machine-readable formats need it, not a run that prints text

    text = json.dumps(value, ensure_ascii=False, **kwargs)
    return re.sub(_UNSAFE_IN_JSON, _json_escape, text)
