"""``# noqa`` directives: read from a row's comment, never from a string that looks like one.

The suppressor (engine), ``--add-noqa`` and AMP100 all take "the directive on row R" from
:func:`directives_in_comments`, so a directive one of them writes or removes is the one the
others read. A comment that starts ``# amplint: noqa`` (``: CODES`` optional) exempts its whole
file, as ``# ruff: noqa`` does for ruff; ``# ruff: noqa`` and ``# flake8: noqa`` belong to those
tools and exempt nothing here.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from amplint.model import SYNTAX_ERROR_CODE

# ``# noqa`` alone suppresses everything; ``# noqa: AMP001, AMP003`` only those
# codes. Codes of other tools (``# noqa: E501``) must not suppress ours. Compiled on first use
# (``re`` keeps it): a run that parses no file never needs it.
_NOQA = r"(?i)#\s*noqa(?P<sep>\s*:\s*(?P<codes>[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*))?"
# Every file is asked, most hold no directive: a case-insensitive search is ~30x faster than
# ``"noqa" in text.lower()``, and spares tokenizing the file at all.
_MENTIONS_NOQA = re.compile("noqa", re.IGNORECASE)
_LONE_CR = re.compile(r"\r(?!\n)")

UNSUPPRESSIBLE = frozenset({SYNTAX_ERROR_CODE})
UNUSED_NOQA_CODE = "AMP100"  # the rule that reports a directive suppressing nothing


_CODES = r"[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*"
_FILE_NOQA = r"(?i)#\s*amplint\s*:\s*noqa\b(?:\s*:\s*(?P<codes>" + _CODES + r"))?"


def file_exemption(comment: str) -> frozenset[str] | None:
    """The codes a ``# amplint: noqa[: CODES]`` comment exempts its file from (``ALL_CODES``: every code).

    ``None`` when ``comment`` is no such directive.
    """
    match = re.match(_FILE_NOQA, comment)
    if match is None:
        return None
    listed = match.group("codes")
    return ALL_CODES if listed is None else frozenset(code.upper() for code in split_codes(listed))


ALL_CODES = frozenset({"ALL"})


def directive(comment: str) -> re.Match | None:
    """The ``# noqa`` directive in ``comment`` (``codes`` group: its codes, absent for a bare one)."""
    return re.search(_NOQA, comment)


def split_codes(codes: str) -> list[str]:
    return [code for code in re.split(r"[\s,]+", codes) if code]


class RowDirective(NamedTuple):
    """The directive in one row's comment."""

    column: int  # where the comment starts on its row (0-based, in characters)
    comment: str  # the whole comment, from its "#" to the end of the line
    match: re.Match  # the directive inside ``comment``

    @property
    def codes(self) -> frozenset[str] | None:
        """The codes it names, upper case; ``None`` for a bare ``# noqa``, which names every code."""
        listed = self.match.group("codes")
        return None if listed is None else frozenset(code.upper() for code in split_codes(listed))

    def suppresses(self, code: str) -> bool:
        if code in UNSUPPRESSIBLE:
            return False
        codes = self.codes
        return codes is None or code in codes


def python_tokens(text: str) -> Iterator[tokenize.TokenInfo]:
    """The tokens of ``text``, with rows as Python counts them; raises where tokenize fails."""
    if "\r" in text:
        # Python ends a row at a lone "\r", tokenize does not (it yields an error token and no
        # NEWLINE); "\n" in its place keeps every row and column where it was.
        text = _LONE_CR.sub("\n", text)
    return tokenize.generate_tokens(io.StringIO(text).readline)


def comment_tokens(text: str) -> Iterator[tokenize.TokenInfo]:
    """The comment tokens of ``text``, as far as it tokenizes.

    Past a tokenize error (a file Python rejects, reported as AMP000) where a string starts or ends
    is a guess, so nothing there is read as a comment: a directive is then missed rather than
    taken from a string.
    """
    try:
        for token in python_tokens(text):
            if token.type == tokenize.ERRORTOKEN:
                return  # an unterminated quote: the rest of its line was tokenized as code
            if token.type == tokenize.COMMENT:
                yield token
    except (tokenize.TokenError, SyntaxError):
        return


def directives_in_comments(comments: Iterable[tokenize.TokenInfo]) -> dict[int, RowDirective]:
    """The directive on each row, from its comment token (a comment runs to the end of its row)."""
    found: dict[int, RowDirective] = {}
    for token in comments:
        match = directive(token.string)
        if match is not None:
            found[token.start[0]] = RowDirective(token.start[1], token.string, match)
    return found


def row_directives(text: str) -> dict[int, RowDirective]:
    """The directive on each row of ``text``; only a text that mentions noqa is tokenized."""
    if _MENTIONS_NOQA.search(text) is None:
        return {}
    return directives_in_comments(comment_tokens(text))


class FileDirectives:
    """The directives of one text, read when first asked for: most parsed files have no finding."""

    __slots__ = ("_text", "_by_row", "_exempt")

    def __init__(self, text: str) -> None:
        self._text = text
        self._by_row: dict[int, RowDirective] | None = None
        self._exempt: frozenset[str] = frozenset()

    def by_row(self) -> dict[int, RowDirective]:
        if self._by_row is None:
            self._scan()
        return self._by_row  # type: ignore[return-value]

    def _scan(self) -> None:
        text, self._text = self._text, ""  # the scan is all that is needed from it
        if _MENTIONS_NOQA.search(text) is None:
            self._by_row = {}
            return
        comments = list(comment_tokens(text))
        self._by_row = directives_in_comments(comments)
        exempt: set[str] = set()
        for token in comments:
            exempt |= file_exemption(token.string) or frozenset()
        self._exempt = frozenset(exempt)

    def exempts_file(self, code: str) -> bool:
        """Whether a ``# amplint: noqa`` comment exempts the whole file from ``code``."""
        if self._by_row is None:
            self._scan()
        if code in UNSUPPRESSIBLE or not self._exempt:
            return False
        return "ALL" in self._exempt or code in self._exempt

    def on_row(self, row: int) -> RowDirective | None:
        return self.by_row().get(row)

    def suppresses(self, row: int, code: str) -> bool:
        found = self.on_row(row)
        return found is not None and found.suppresses(code)


class SuppressionLog:
    """What the directives of one text suppressed while its rules ran (for AMP100, which runs last).

    ``directives`` are the ones the suppressor read; ``used`` maps a row to the codes its
    directive suppressed; ``enabled`` are the rules enabled for the text; with ``respected``
    false (``--ignore-noqa``) nothing was suppressed and nothing may be called unused.
    """

    __slots__ = ("directives", "enabled", "respected", "used")

    def __init__(self, directives: FileDirectives, enabled: frozenset[str], respected: bool) -> None:
        self.directives = directives
        self.enabled = enabled
        self.respected = respected
        self.used: dict[int, set[str]] = {}

    def suppress(self, row: int, code: str) -> bool:
        """Whether the directive on ``row`` suppresses ``code``; a suppression is logged."""
        if not self.respected:
            return False
        exempt = self.directives.exempts_file(code)
        if not self.directives.suppresses(row, code):
            return exempt
        # A row directive the file-wide one makes redundant still counts as used: AMP100 stays
        # silent rather than ask to remove a directive that another tool's run may need.
        self.used.setdefault(row, set()).add(code)
        return True
