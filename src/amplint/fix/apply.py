"""Applying fixes: node replacement, overlap, the multi-pass loop, and fixes as text edits.

Every check that a fix "parses" renders and re-parses the whole module, so the number of such
checks decides the cost of a file with many findings. Fixes are checked together, in one
render per pass; only when that result does not parse are the fixes split in halves to find
the ones at fault, so a file with ``n`` fixes costs a few renders rather than ``n``.
"""

from __future__ import annotations

import ast
import warnings
from bisect import bisect_right
from typing import Callable, Iterable, Protocol, Sequence

import libcst as cst

from amplint.fix.model import Applicability, Fix
from amplint.model import Finding

MAX_FIX_PASSES = 10
PARSE_FAILURE_NOTE = "not fixed: the fix would produce code that does not parse"

Span = tuple[tuple[int, int], tuple[int, int]]  # ((line, column), (end line, end column))


class LintPass(Protocol):
    """What one lint of a text gives the fixer: the parsed module, positions and live fixes."""

    module: cst.Module | None
    positions: object
    fixes: list[tuple[Finding, Fix]]
    parsed_text: str  # what ``module`` was parsed from: the text, or its focused form


class ReplaceNodes(cst.CSTTransformer):
    """Replaces nodes by identity (``changes`` maps original nodes to their replacements)."""

    def __init__(self, changes: dict) -> None:
        super().__init__()
        self.changes = changes

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        replacement = self.changes.get(original_node)
        return updated_node if replacement is None else replacement


def _compiles(code: str) -> bool:
    """The running interpreter accepts ``code`` (libcst also accepts newer or older syntax)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(code, "<fixed>", "exec", ast.PyCF_ONLY_AST)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def apply_changes(
    module: cst.Module, changes: dict, text: str = "", original_compiles: Callable[[], bool] | None = None
) -> str | None:
    """The module's text (parsed from ``text``) with ``changes`` applied, or ``None`` if the result does not parse.

    "Parses" means libcst reads it back, and the running Python compiles it whenever it
    compiled the original (a fix must not turn valid code into code this Python rejects).
    ``original_compiles`` answers the second half once for many calls on the same module.
    """
    try:
        new_code = keep_final_cr(text, module.visit(ReplaceNodes(changes)).code)
        cst.parse_module(new_code)
    except Exception:  # noqa: BLE001 - any failure means this fix is not applied
        return None
    if not _compiles(new_code):
        if original_compiles is None:
            if _compiles(text or module.code):
                return None
        elif original_compiles():
            return None
    return new_code


def keep_final_cr(text: str, code: str) -> str:
    # libcst drops the last "\r" of a text that ends in one (old Mac line endings).
    if text.endswith("\r") and not code.endswith(("\r", "\n")):
        return code + "\r"
    return code


class Target:
    """One parsed text, rendered with sets of changes; whether the text itself compiles is asked once."""

    def __init__(self, module: cst.Module, text: str) -> None:
        self.module, self.text = module, text
        self._compiles: bool | None = None

    def original_compiles(self) -> bool:
        if self._compiles is None:
            self._compiles = _compiles(self.text or self.module.code)
        return self._compiles

    def render(self, changes: dict) -> str | None:
        return apply_changes(self.module, changes, self.text, self.original_compiles)


def merged_changes(fixes: Iterable[Fix], base: dict | None = None) -> dict:
    changes = dict(base or {})
    for fix in fixes:
        changes.update(fix.changes)
    return changes


def largest_valid(fixes: Sequence[Fix], render: Callable[[dict], str | None]) -> tuple[list[Fix], str | None, list[Fix]]:
    """``(accepted, text, broken)``: fixes whose merged result parses, that result, and the fixes
    that do not parse even alone. The rest (valid alone, not together with ``accepted``) wait.

    One render when all fixes are fine; each broken one costs about ``3 log2(n)`` more.
    """
    if not fixes:
        return [], None, []
    text = render(merged_changes(fixes))
    if text is not None:
        return list(fixes), text, []
    if len(fixes) == 1:
        return [], None, list(fixes)
    middle = len(fixes) // 2
    left, left_text, left_broken = largest_valid(fixes[:middle], render)
    right, right_text, right_broken = largest_valid(fixes[middle:], render)
    broken = left_broken + right_broken
    if not left or not right:
        return (left, left_text, broken) if left else (right, right_text, broken)
    both = render(merged_changes(left + right))
    if both is not None:
        return left + right, both, broken
    return left, left_text, broken


class DisjointSpans:
    """Spans taken by chosen fixes, merged and sorted, so an overlap test is a binary search.

    Spans touching at an end count as overlapping, as they did when every pair was compared.
    """

    def __init__(self) -> None:
        self._starts: list[tuple[int, int]] = []
        self._spans: list[Span] = []

    def overlaps(self, span: Span) -> bool:
        start, end = span
        index = bisect_right(self._starts, start)
        if index > 0 and self._spans[index - 1][1] >= start:
            return True
        return index < len(self._spans) and self._spans[index][0] <= end

    def add(self, span: Span) -> None:
        start, end = span
        index = bisect_right(self._starts, start)
        low = index - 1 if index > 0 and self._spans[index - 1][1] >= start else index
        high = index
        while high < len(self._spans) and self._spans[high][0] <= end:
            high += 1
        if low < high:
            start = min(start, self._spans[low][0])
            end = max(end, self._spans[high - 1][1])
        self._spans[low:high] = [(start, end)]
        self._starts[low:high] = [start]


def _span(positions, node) -> Span:
    position = positions[node]
    return (position.start.line, position.start.column), (position.end.line, position.end.column)


def fix_spans(positions, fix) -> list[Span]:
    spans = []
    for node in fix.changes:
        try:
            spans.append(_span(positions, node))
        except KeyError:
            return []
    return spans


def group_key(fix: Fix) -> str:
    return fix.group or str(id(fix))


def _candidates(fixes, positions, unsafe: bool, taken: DisjointSpans, excluded: set[str]) -> tuple[list[Fix], dict[str, int]]:
    """Fixes to try together, in finding order, none overlapping another or ``taken``; and for
    each, how many findings share its group (applied with it)."""
    chosen: list[Fix] = []
    members: dict[str, int] = {}
    for _finding, fix in fixes:
        if fix.applicability is Applicability.UNSAFE and not unsafe:
            continue
        key = group_key(fix)
        if key in excluded:
            continue
        if key in members:
            members[key] += 1
            continue
        spans = fix_spans(positions, fix)
        if not spans or any(taken.overlaps(span) for span in spans):
            continue
        for span in spans:
            taken.add(span)
        chosen.append(fix)
        members[key] = 1
    return chosen, members


# A candidate that does not parse may block a fix that overlaps it: a few rounds within one pass
# give those a chance without another lint.
_ROUNDS_PER_PASS = 3


def _one_pass(text: str, lint: LintPass, unsafe: bool) -> tuple[str | None, int]:
    target = Target(lint.module, text)  # type: ignore[arg-type]
    ordered = sorted(lint.fixes, key=lambda pair: pair[0].sort_key())
    taken = DisjointSpans()
    excluded: set[str] = set()
    accepted: list[Fix] = []
    new_text: str | None = None
    applied = 0
    for _ in range(_ROUNDS_PER_PASS):
        candidates, members = _candidates(ordered, lint.positions, unsafe, taken, excluded)
        if not candidates:
            break
        base = merged_changes(accepted)
        chosen, result, _broken = largest_valid(candidates, lambda changes: target.render({**base, **changes}))
        if chosen:
            accepted.extend(chosen)
            new_text = result
            applied += sum(members[group_key(fix)] for fix in chosen)
        rejected = {group_key(fix) for fix in candidates} - {group_key(fix) for fix in chosen}
        if not rejected:
            break
        excluded |= rejected
        # the spans of rejected candidates are free again for the fixes they blocked
        taken = DisjointSpans()
        for fix in accepted:
            for span in fix_spans(lint.positions, fix):
                taken.add(span)
        excluded |= {group_key(fix) for fix in accepted}
    return new_text, applied


def fix_text(text: str, lint_once: Callable[[str, bool], LintPass], unsafe: bool) -> tuple[str, int]:
    """Apply fixes pass after pass until nothing changes; returns the text and how many were applied.

    Each pass lints the current text (``lint_once(text, focus)``), takes the fixes in finding
    order that do not overlap an earlier one, and applies together those whose merged result
    parses. A pass lints the focused text, as check mode does; one whose changes touch a line
    the focused text blanked is linted again from the whole text.
    """
    from amplint.fix.focused import unfocus

    applied = 0
    for _ in range(MAX_FIX_PASSES):
        lint = lint_once(text, True)
        if lint.module is None:
            break
        new_text, count = _one_pass(lint.parsed_text or text, lint, unsafe)
        if new_text is not None and lint.parsed_text and lint.parsed_text != text:
            carried = unfocus(text, lint.parsed_text, new_text)
            if carried is None:
                lint = lint_once(text, False)
                if lint.module is None:
                    break
                new_text, count = _one_pass(text, lint, unsafe)
            else:
                new_text = carried
        if new_text is None or new_text == text:
            break
        applied += count
        text = new_text
    return text, applied
