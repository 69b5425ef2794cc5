"""Applying fixes: node replacement, overlap, the multi-pass loop, and fixes as text edits."""

from __future__ import annotations

import ast
import warnings
from typing import Callable, Protocol

import libcst as cst

from amplint.fix.model import Applicability, Fix
from amplint.model import Edit, Finding, FixInfo, Location

MAX_FIX_PASSES = 10
PARSE_FAILURE_NOTE = "not fixed: the fix would produce code that does not parse"


class LintPass(Protocol):
    """What one lint of a text gives the fixer: the parsed module, positions and live fixes."""

    module: cst.Module | None
    positions: object
    fixes: list[tuple[Finding, Fix]]


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


def apply_changes(module: cst.Module, changes: dict, text: str = "") -> str | None:
    """The module's text (parsed from ``text``) with ``changes`` applied, or ``None`` if the result does not parse.

    "Parses" means libcst reads it back, and the running Python compiles it whenever it
    compiled the original (a fix must not turn valid code into code this Python rejects).
    """
    try:
        new_code = _keep_final_cr(text, module.visit(ReplaceNodes(changes)).code)
        cst.parse_module(new_code)
    except Exception:  # noqa: BLE001 - any failure means this fix is not applied
        return None
    if not _compiles(new_code) and _compiles(module.code):
        return None
    return new_code


def _keep_final_cr(text: str, code: str) -> str:
    # libcst drops the last "\r" of a text that ends in one (old Mac line endings).
    if text.endswith("\r") and not code.endswith(("\r", "\n")):
        return code + "\r"
    return code


def _span(positions, node) -> tuple[tuple[int, int], tuple[int, int]]:
    position = positions[node]
    return (position.start.line, position.start.column), (position.end.line, position.end.column)


def _fix_spans(positions, fix) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    spans = []
    for node in fix.changes:
        try:
            spans.append(_span(positions, node))
        except KeyError:
            return []
    return spans


def _overlaps(a, b) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def _offsets(text: str) -> list[int]:
    starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            starts.append(index + 1)
    return starts


def _to_location(starts: list[int], offset: int) -> Location:
    import bisect

    row = bisect.bisect_right(starts, offset) - 1
    return Location(row + 1, offset - starts[row] + 1)


def _edit_between(old: str, new: str, offset: int = 0, starts: list[int] | None = None) -> Edit:
    """The smallest single edit turning ``old`` into ``new`` (positions shifted by ``offset``)."""
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
        suffix += 1
    starts = starts if starts is not None else _offsets(old)
    return Edit(
        content=new[prefix: len(new) - suffix],
        location=_to_location(starts, offset + prefix),
        end_location=_to_location(starts, offset + len(old) - suffix),
    )


def _edits_between(old: str, new: str) -> list[Edit]:
    """One edit per changed hunk of lines, as ruff reports fixes that touch several places."""
    import difflib

    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    starts = _offsets(old)
    edits = []
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        begin = sum(len(line) for line in old_lines[:i1])
        edits.append(
            _edit_between("".join(old_lines[i1:i2]), "".join(new_lines[j1:j2]), offset=begin, starts=starts)
        )
    return edits


def attach_fix_info(module: cst.Module, fixes: list[tuple[Finding, Fix]], text: str, edits: bool) -> None:
    """Describe each live fix; with ``edits``, also as concrete text edits (json, sarif).

    Computing edits means applying each fix to a copy of the module and parsing
    the result, which costs more than linting; only formats that print edits ask.
    """
    if not edits:
        for finding, fix in fixes:
            finding.fix = FixInfo(fix.applicability, fix.message, [])
        return
    by_group: dict[str, str | None] = {}
    for finding, fix in fixes:
        key = fix.group or str(id(fix))
        if key not in by_group:
            by_group[key] = apply_changes(module, fix.changes, text)
        new = by_group[key]
        if new is None:
            finding.no_fix_reason = PARSE_FAILURE_NOTE
            continue
        finding.fix = FixInfo(fix.applicability, fix.message, _edits_between(text, new))


def fix_text(text: str, lint_once: Callable[[str], LintPass], unsafe: bool) -> tuple[str, int]:
    """Apply fixes pass after pass until nothing changes; returns the text and how many were applied.

    Each pass lints the current text (``lint_once``), takes the fixes in finding order that do
    not overlap an earlier one and whose result parses, and applies them together.
    """
    applied = 0
    for _ in range(MAX_FIX_PASSES):
        lint = lint_once(text)
        if lint.module is None:
            break
        chosen: list = []
        taken: list = []
        seen_groups: set[str] = set()
        for finding, fix in sorted(lint.fixes, key=lambda pair: pair[0].sort_key()):
            if fix.applicability is Applicability.UNSAFE and not unsafe:
                continue
            key = fix.group or str(id(fix))
            if key in seen_groups:
                applied += 1
                continue
            spans = _fix_spans(lint.positions, fix)
            if not spans or any(_overlaps(s, t) for s in spans for t in taken):
                continue
            if apply_changes(lint.module, fix.changes, text) is None:  # never write code that does not parse
                continue
            seen_groups.add(key)
            chosen.append(fix)
            taken.extend(spans)
            applied += 1
        if not chosen:
            break
        merged: dict = {}
        for fix in chosen:
            merged.update(fix.changes)
        new_text = apply_changes(lint.module, merged, text)
        if new_text is None:
            new_text = apply_changes(lint.module, chosen[0].changes, text)
        if new_text is None or new_text == text:
            break
        text = new_text
    return text, applied
