"""The exceptions of the public API, importable with ``import amplint`` alone (no engine, no libcst)."""

from __future__ import annotations


class NotLinted(Exception):
    """amplint could not lint this text at all (an expression nested too deep for its parser...).

    Raised instead of returning no findings, which a caller would take for a clean text.
    ``reason`` is the line ``amplint check`` prints after ``amplint: error:`` for the same text;
    ``filename`` is the ``path`` the text was linted under. A syntax error is not this: it is
    reported as an ``AMP000`` finding.
    """

    def __init__(self, reason: str, filename: str) -> None:
        # Both in ``args``: the exception pickles (multiprocessing, pytest-xdist) and reprs whole.
        super().__init__(reason, filename)
        self.reason = reason
        self.filename = filename

    def __str__(self) -> str:
        return self.reason
