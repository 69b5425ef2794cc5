"""Which statements the rule gates' walk visits: the words its flags read, and the lines of a
text that spell one (:mod:`amplint.tree_evidence`)."""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate

# A statement none of whose lines holds one of these words, nor ``device`` before an opening
# parenthesis (a call of it), and that is no import, sets no flag of
# :class:`~amplint.tree_evidence.TreeEvidence` read in the walk: each is read from an identifier,
# a keyword or an attribute that spells one of them (``autocast`` and ``scaler`` in any case, as the flags read
# them; ``GradScaler`` and ``...Scaler`` hold ``scaler``; ``fp16_full_eval`` holds ``fp16``;
# ``is_autocast_enabled`` holds ``autocast``; a string ``"torch_autocast"`` or one ending in
# ``.json``, a DeepSpeed config read from elsewhere), a ``device`` only from a call of it or an import
# of it ``as`` another name. Identifiers are spelled as written only in ASCII source (Python
# normalises others).
WALK_WORDS = ("bf16", "backward", "prepare", "unscale_", ".json")
# AMP001's evidence: the identifier ``amp`` in an attribute or an import (the legacy function
# names hold ``autocast``), or a string spelling a dotted ``.amp``.
AMP_WORD = re.compile(r"\bamp\b")
WALK_WORDS_ANY_CASE = ("autocast", "scaler", "fp16")
DEVICE_CALL = re.compile(r"device(?:\s|\\\n|#[^\n]*)*\(")


# The words of :data:`WALK_WORDS_ANY_CASE`, in any case, where lower-casing would move offsets
# (``İ`` lower-cases to two characters); ``re`` matches more spellings than ``str.lower`` does
# (the long s as ``s``), never fewer for these words (no ``i`` or ``k``).
_ANY_CASE_WORD = re.compile("|".join(WALK_WORDS_ANY_CASE), re.IGNORECASE)
_NOT_ASCII = re.compile(r"[^\x00-\x7f]+")


def lines_spelling_a_word(text: str, lines: list[str]) -> list[int]:
    """The numbers, in order, of the lines that spell a word a flag reads, that begin a ``device``
    call, or that are not ASCII: a statement spells a word if one of its lines is among them.
    Each word is searched once in the whole text instead of once in every statement that holds it."""
    starts = [0, *accumulate(map(len, lines))]
    return sorted({bisect_right(starts, offset) for offset in offsets_spelling_a_word(text)})


def offsets_spelling_a_word(text: str, code: str | None = None, devices: bool = True) -> set[int]:
    """Where ``text`` spells a word a flag reads, begins a ``device`` call or is not ASCII.
    ``code``: the text with its strings and comments masked, character for character
    (:func:`amplint.logical_lines.masked_code`); then only characters outside ASCII in code
    count, as only an identifier is read in Python's normal form (a string's or a comment's
    characters spell no identifier, and those of its words that a flag reads are ASCII).
    Without ``devices``, a ``device`` call is not looked for (its flag is not to be read)."""
    at: set[int] = set()
    for word in WALK_WORDS:
        at.update(occurrences(text, word))
    if "\u0130" in text:
        at.update(match.start() for match in _ANY_CASE_WORD.finditer(text))
    else:  # lower-casing keeps every offset
        lowered = text.lower()
        for word in WALK_WORDS_ANY_CASE:
            at.update(occurrences(lowered, word))
    # ``\bamp\b``: ``re`` finds a pattern that begins with ``\b`` at every position, slowly
    at.update(found for found in occurrences(text, "amp")
              if not _word_character(text, found - 1) and not _word_character(text, found + 3))
    if devices and "device" in text:
        at.update(match.start() for match in DEVICE_CALL.finditer(text))
    outside = text if code is None else code
    if not outside.isascii():
        at.update(match.start() for match in _NOT_ASCII.finditer(outside))
    return at


def occurrences(text: str, word: str):
    """Where ``word`` begins in ``text``, each place in order."""
    found = text.find(word)
    while found >= 0:
        yield found
        found = text.find(word, found + 1)


def _word_character(text: str, index: int) -> bool:
    """What ``re``'s ``\\w`` matches in a text, at ``index`` (nothing outside the text)."""
    if not 0 <= index < len(text):
        return False
    character = text[index]
    return character.isalnum() or character == "_"
