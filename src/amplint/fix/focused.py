"""Carrying a fix made on the focused text back to the file.

Check and fix mode lint the same text: the focused one (:mod:`amplint.focus`), where definitions
no rule needs are blank lines and every kept line is the file's own line, at its own number.
A fix pass renders the focused module with its changes; the lines that render changed are then
changed in the file. That is exact only where the changed lines are the file's own lines, so a
change that touches a blanked line (a fix that rewrites a whole class with a blanked method in
it) is not carried over: the caller lints that pass from the whole text instead.
"""

from __future__ import annotations

import difflib

from amplint.focus import physical_lines


def unfocus(original: str, focused: str, fixed: str) -> str | None:
    """``original`` with the changes that turned ``focused`` into ``fixed``; ``None`` when a
    change touches a line the focused text blanked (or the texts do not line up)."""
    if focused == original:
        return fixed
    old = physical_lines(focused)
    whole = physical_lines(original)
    if len(old) != len(whole):
        return None
    new = physical_lines(fixed)
    # Fixes are few and local: only the lines between the common head and tail are compared.
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    middle_old, middle_new = old[head:len(old) - tail], new[head:len(new) - tail]
    out = whole[:head]
    at = head
    matcher = difflib.SequenceMatcher(a=middle_old, b=middle_new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        start, end = head + i1, head + i2
        out.extend(whole[at:start])
        if tag == "equal":
            out.extend(whole[start:end])
        else:
            if whole[start:end] != old[start:end]:
                return None  # the change replaces lines the focused text blanked
            if tag == "insert" and not _anchored(whole, old, start):
                return None  # inserted next to a blanked line: where it goes is not known
            out.extend(middle_new[j1:j2])
        at = end
    out.extend(whole[at:])
    return "".join(out)


def _anchored(whole: list[str], old: list[str], at: int) -> bool:
    """Lines inserted before line ``at`` sit between two of the file's own lines."""
    before = at == 0 or whole[at - 1] == old[at - 1]
    after = at == len(whole) or whole[at] == old[at]
    return before and after
