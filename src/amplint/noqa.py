"""``# noqa`` suppression comments on the reported line."""

from __future__ import annotations

import re

from amplint.model import SYNTAX_ERROR_CODE

# ``# noqa`` alone suppresses everything; ``# noqa: AMP001, AMP003`` only those
# codes. Codes of other tools (``# noqa: E501``) must not suppress ours. Compiled on first use
# (``re`` keeps it): a run that parses no file never needs it.
_NOQA = r"(?i)#\s*noqa(?P<sep>\s*:\s*(?P<codes>[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*))?"

UNSUPPRESSIBLE = frozenset({SYNTAX_ERROR_CODE})
UNUSED_NOQA_CODE = "AMP100"  # the rule that reports a directive suppressing nothing


def suppressed_codes(line: str) -> frozenset[str] | None:
    """Codes suppressed on ``line``; ``None`` when nothing is, ``{"*"}`` for a bare noqa."""
    if "#" not in line:
        return None
    match = re.search(_NOQA, line)
    if match is None:
        return None
    if match.group("codes") is None:
        return frozenset({"*"})
    return frozenset(code.upper() for code in re.split(r"[\s,]+", match.group("codes")) if code)


def is_suppressed(code: str, line: str) -> bool:
    if code in UNSUPPRESSIBLE:
        return False
    codes = suppressed_codes(line)
    return codes is not None and ("*" in codes or code in codes)


def directive(comment: str) -> re.Match | None:
    """The ``# noqa`` directive in ``comment`` (``codes`` group: its codes, absent for a bare one)."""
    return re.search(_NOQA, comment)


def split_codes(codes: str) -> list[str]:
    return [code for code in re.split(r"[\s,]+", codes) if code]
