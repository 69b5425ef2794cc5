"""The logical lines of a text that spell given words, cut out so that they parse on their own.

The rule gates (:mod:`amplint.rule_gates`) read flags from the statements whose lines spell a
word they look for; every such flag is read from one node and its children, all inside one
logical line (a simple statement, a compound statement's header, a decorator). So the gates can
be asked of those logical lines alone, parsed as a small module, instead of the whole file.

Finding logical lines takes a lexer, not a parser: strings and comments are found by one regular
expression (so that a bracket, a quote or a ``def`` inside them is not read as code), then the
brackets of the code between them are counted, from the nearest line that opens a ``def`` or a
``class`` (which only a new logical line at bracket depth zero can). Whatever the lexer is not
sure of gives ``None``, and the caller parses the whole file as before: an unterminated or stray
quote, a form feed or a lone ``\\r`` line ending, an f-string whose braces do not balance (from
Python 3.12 an f-string may hold its own quote inside a replacement field, which ends it here
too early), a logical line that parses neither alone nor completed.
"""

from __future__ import annotations

import re
from bisect import bisect_right

# A comment, a string (triple-quoted or not, escapes read as Python reads them: in a raw string
# a backslash still keeps the quote after it from ending the string), or a quote that begins
# neither (an unterminated string).
_LEXEME = re.compile(
    r"""\#[^\r\n]*"""
    r"""|'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''"""
    r'''|"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'''
    r"""|'[^'\\\r\n]*(?:\\(?:\r\n|.)[^'\\\r\n]*)*'"""
    r'''|"[^"\\\r\n]*(?:\\(?:\r\n|.)[^"\\\r\n]*)*"'''
    r"""|['"]""",
    re.S,
)
_STRING_PREFIX = re.compile(r"[rRbBuUfF]{1,2}$")
# A line only a new logical line at bracket depth zero can begin with: ``def`` or ``class`` (after
# ``async``, or only indentation).
_ANCHOR_WORDS = ("def ", "class ")
_ANCHOR_PREFIX = re.compile(r"[ \t]*(?:async[ \t]+)?")
_FIRST_WORD = re.compile(r"[ \t]*(@|[A-Za-z_]\w*)")
# A compound statement's header with a body of its own after it: completed by ``pass``.
_HEADERS = frozenset({"if", "while", "for", "with", "def", "class", "async"})
# Headers that cannot stand alone: read as an ``if`` with the same body.
_AS_IF = frozenset({"elif", "else", "try", "finally"})


def logical_lines_spelling(text: str, masked: str, starts: list[int], numbers: list[int]) -> str | None:
    """The logical lines of ``text`` that hold one of the physical lines ``numbers`` (1-based,
    ascending), each dedented and completed so that it parses alone, joined into one module text;
    ``None`` when the lexer is unsure. ``masked``: :func:`masked_code` of the text; ``starts``:
    the offset of each physical line and of the text's end."""
    lines = len(starts) - 1
    anchors = _anchors(masked)
    pieces: list[str] = []
    at = 1  # the next line not yet read
    depth = 0
    for number in numbers:
        if number < at:
            continue  # in the logical line just cut
        before = bisect_right(anchors, starts[number - 1])
        anchor = bisect_right(starts, anchors[before - 1]) if before else 1
        if anchor > at:
            at, depth = anchor, 0
        begin = at
        while True:
            if at > lines:
                return None  # the text ends inside a bracket or a string
            line = masked[starts[at - 1]:starts[at]]
            if depth == 0 and (at == begin or not continues):
                begin = at
            depth += (line.count("(") + line.count("[") + line.count("{")
                      - line.count(")") - line.count("]") - line.count("}"))
            if depth < 0:
                return None
            continues = not line.endswith("\n") and at < lines or line.rstrip("\r\n").endswith("\\")
            at += 1
            if depth == 0 and not continues and at > number:
                break
        piece = _standalone(text[starts[begin - 1]:starts[at - 1]], masked[starts[begin - 1]:starts[at - 1]])
        if piece is None:
            return None
        pieces.append(piece)
    return "\n".join(pieces) + "\n"


def _anchors(masked: str) -> list[int]:
    """The offsets, in order, of the lines of ``masked`` that begin with ``def`` or ``class``."""
    found = []
    for word in _ANCHOR_WORDS:
        at = masked.find(word)
        while at >= 0:
            begin = masked.rfind("\n", 0, at) + 1
            prefix = _ANCHOR_PREFIX.match(masked, begin)
            if prefix.end() == at:
                found.append(begin)
            at = masked.find(word, at + len(word))
    return sorted(found)


def masked_code(text: str) -> str | None:
    """``text`` with every string replaced, character for character, by ``x`` (line endings
    inside a string too: the logical line goes on through them), and every comment by spaces;
    ``None`` when the lexer is unsure of it."""
    if "\f" in text or text.count("\r") != text.count("\r\n"):
        return None
    out = []
    last = 0
    # Each lexeme begins at the first ``#`` or quote after the last one: found by ``str.find``
    # (a search for one character), faster than the expression's own scan for any of three.
    size = len(text)

    def next_at(character: str, after: int) -> int:
        at = text.find(character, after)
        return at if at >= 0 else size

    hash_at, single_at, double_at = next_at("#", 0), next_at("'", 0), next_at('"', 0)
    while True:
        start = min(hash_at, single_at, double_at)
        if start == size:
            break
        match = _LEXEME.match(text, start)
        end = match.end()
        if hash_at < end:
            hash_at = next_at("#", end)
        if single_at < end:
            single_at = next_at("'", end)
        if double_at < end:
            double_at = next_at('"', end)
        if end - start == 1 and text[start] in "'\"":
            return None  # a quote that begins no complete string
        if text[start] == "#":
            out.append(text[last:start])
            out.append(" " * (end - start))  # a header's ``:`` then ends its line
            last = end
            continue
        # Read as an f-string whenever a prefix letter before the quote says ``f``, whatever
        # precedes it: the test only ever makes the answer ``None``.
        window = text[max(0, start - 2):start]
        if ("f" in window or "F" in window) and _STRING_PREFIX.search(window) and not _braces_balance(match.group()):
            return None
        out.append(text[last:start])
        out.append("x" * (end - start))
        last = end
    out.append(text[last:])
    return "".join(out)


def _braces_balance(literal: str) -> bool:
    """An f-string's replacement fields all close before its closing quote (``{{`` and ``}}``
    read as the literal braces they are outside a field)."""
    depth = 0
    for brace in re.findall(r"\{\{|\}\}|[{}]", literal):
        if brace in ("{{", "}}"):
            if depth == 0:
                continue
            depth += 2 if brace == "{{" else -2
        else:
            depth += 1 if brace == "{" else -1
        if depth < 0:
            return False
    return depth == 0


def _standalone(source: str, code: str) -> str | None:
    """One logical line made to parse alone: dedented, a header given a ``pass`` body, a header
    that needs the one before it (``else:``, ``except E:``) read as one that does not."""
    indent = len(source) - len(source.lstrip(" \t"))
    source, code = source[indent:], code[indent:]
    first = _FIRST_WORD.match(code)
    word = first.group(1) if first is not None else ""
    header = code.rstrip().endswith(":")
    if word == "@":
        return source.rstrip("\r\n") + "\ndef _(): pass"
    if word == "elif":
        source = source[2:]
    elif word in _AS_IF:
        source = "if 1" + source[len(word):]
    elif word == "except":
        source = "try: pass\n" + source
    elif header and word not in _HEADERS:
        return None  # ``case``, ``match``: not worth completing
    if header:
        source = source.rstrip("\r\n") + "\n pass"
    return source.rstrip("\r\n")
