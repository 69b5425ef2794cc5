"""The escaping every reporter relies on: inert terminal text, encodable file names, safe JSON bytes."""

from __future__ import annotations

import json

import pytest

from amplint.report.escape import dumps, path_text, terminal


@pytest.mark.parametrize(
    "raw, shown",
    [
        ("plain text, tabs\tstay", "plain text, tabs\tstay"),
        ("\x1b[2J\x07", "\u241b[2J\u2407"),  # ESC and BEL as their control pictures
        ("a\r\n::error::x", "a\u240d\u240a::error::x"),  # one line: the command cannot start a line
        ("\x7f", "\u2421"),
        ("\u009b31m", "\\u009b31m"),  # C1 CSI
        ("\u202eevil\u2066", "\\u202eevil\\u2066"),  # bidi override and isolate
        ("zero\u200bwidth\ufeff", "zero\\u200bwidth\\ufeff"),
        ("line\u2028sep", "line\\u2028sep"),
        ("tag\U000e0041", "tag\\U000e0041"),
        ("b\udcff.py", "b\\xff.py"),  # an undecodable byte of a file name
        ("caf\u00e9 \u4e2d\u6587 \U0001f600", "caf\u00e9 \u4e2d\u6587 \U0001f600"),  # readable text untouched
    ],
)
def test_terminal_shows_every_controlling_character(raw, shown):
    assert terminal(raw) == shown
    terminal(raw).encode("utf-8")  # strict


def test_path_text_is_encodable_and_keeps_good_names():
    assert path_text("b\udcff\udc80.py") == "b\\xff\\x80.py"
    assert path_text("ok/\u00e9.py") == "ok/\u00e9.py"
    assert path_text("lone\ud800") == "lone\\ud800"


def test_dumps_keeps_the_value_and_escapes_the_bytes():
    value = {"m": "x\x1b\u009b\u202e\x7f \u00e9\u4e2d", "n": [1, {"k": "\U000e0041"}]}
    text = dumps(value, indent=2)
    assert json.loads(text) == value
    for char in ("\x1b", "\u009b", "\u202e", "\x7f", "\U000e0041"):
        assert char not in text
    assert "\u00e9\u4e2d" in text and "\n  " in text  # readable Unicode and the indentation stay


def test_dumps_writes_undecodable_name_bytes_as_text():
    text = dumps({"filename": "b\udcff.py"})
    text.encode("utf-8")  # strict: no lone surrogate left
    assert json.loads(text) == {"filename": "b\\xff.py"}


def test_terminal_can_leave_line_breaks_to_a_format_that_encodes_them():
    # Workflow and logging commands carry CR and LF as %0D/%0A, exactly; nothing else survives raw.
    raw = "a\r\nb\x1b[1m\x07\x7f\x85\f\u2028\u202e"
    assert terminal(raw, keep_line_breaks=True) == "a\r\nb\u241b[1m\u2407\u2421\\u0085\u240c\\u2028\\u202e"
    assert terminal(raw) == "a\u240d\u240ab\u241b[1m\u2407\u2421\\u0085\u240c\\u2028\\u202e"
