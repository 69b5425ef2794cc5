"""Each fix of a file as text edits (json, sarif, editors), at a cost linear in the file.

Fixes that do not overlap are rendered together: one render of the module, whose codegen
records where each replaced node starts and ends in the old text and where its replacement
lands in the new one. A fix's edits are then the differences inside its own nodes, found
without looking at the rest of the file. Applied to the old text, the edits of a render must
rebuild that render exactly; when they do not (a parent printed something of its own, such as
the ``pass`` of a block left empty), that set of fixes falls back to a render and a diff each.
"""

from __future__ import annotations

import bisect
import difflib
from typing import Sequence

import libcst as cst
from libcst._nodes.internal import CodegenState

import amplint.fix.apply as apply
from amplint.fix.model import Fix
from amplint.model import Edit, Location
from amplint.sourcefile import LINE_BREAK

Range = tuple[int, int]  # character offsets [start, end) in a text


class _Recorder(CodegenState):
    """Codegen that also notes the character range each wanted node prints (first print wins)."""

    def __init__(self, module: cst.Module, wanted: set[int]) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.offset = 0
        self.wanted = wanted
        self.open: list[int | None] = []
        self.ranges: dict[int, Range] = {}

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.open.append(self.offset if id(node) in self.wanted else None)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self.open.pop()
        if start is not None and id(node) not in self.ranges:
            self.ranges[id(node)] = (start, self.offset)


def _record(module: cst.Module, nodes: set[int]) -> tuple[str, dict[int, Range]]:
    state = _Recorder(module, nodes)
    module._codegen(state)
    return "".join(state.tokens), state.ranges


def _replacement_nodes(replacement) -> list[cst.CSTNode]:
    if isinstance(replacement, cst.RemovalSentinel):
        return []
    if isinstance(replacement, cst.FlattenSentinel):
        return list(replacement.nodes)
    return [replacement]


class _Lines:
    def __init__(self, text: str) -> None:
        self.starts = [0] + [match.end() for match in LINE_BREAK.finditer(text)]

    def location(self, offset: int) -> Location:
        row = bisect.bisect_right(self.starts, offset) - 1
        return Location(row + 1, offset - self.starts[row] + 1)


def _hunks(old: str, new: str, offset: int, lines: _Lines) -> list[Edit]:
    """One edit per changed run of lines of ``old`` (at ``offset`` in the file), each made as small as it goes."""
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    old_starts = [0]
    for line in old_lines:
        old_starts.append(old_starts[-1] + len(line))
    edits = []
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            edits.append(_smallest("".join(old_lines[i1:i2]), "".join(new_lines[j1:j2]), offset + old_starts[i1], lines))
    return edits


def _smallest(old: str, new: str, offset: int, lines: _Lines) -> Edit:
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
        suffix += 1
    return Edit(
        content=new[prefix: len(new) - suffix],
        location=lines.location(offset + prefix),
        end_location=lines.location(offset + len(old) - suffix),
    )


def _layers(fixes: Sequence[Fix], positions) -> list[list[Fix]]:
    """Fixes split into sets whose members do not overlap (first fit, in the order given)."""
    layers: list[tuple[apply.DisjointSpans, list[Fix]]] = []
    for fix in fixes:
        spans = apply.fix_spans(positions, fix) if positions is not None else []
        for taken, members in layers:
            if not any(taken.overlaps(span) for span in spans):
                break
        else:
            taken, members = apply.DisjointSpans(), []
            layers.append((taken, members))
        for span in spans:
            taken.add(span)
        members.append(fix)
    return [members for _, members in layers]


class _Layer:
    """The edits of a set of non-overlapping fixes that parse together."""

    def __init__(self, target: apply.Target, old_ranges: dict[int, Range], lines: _Lines) -> None:
        self.target, self.old_ranges, self.lines = target, old_ranges, lines

    def edits(self, fixes: list[Fix]) -> dict[str, list[Edit]]:
        changes = apply.merged_changes(fixes)
        new_module = self.target.module.visit(apply.ReplaceNodes(changes))
        wanted = {id(node) for replacement in changes.values() for node in _replacement_nodes(replacement)}
        new_code, new_ranges = _record(new_module, wanted)
        new_code = apply.keep_final_cr(self.target.text, new_code)
        pieces: dict[str, list[tuple[Range, str]]] = {}
        for fix in fixes:
            regions = self._regions(fix, new_code, new_ranges)
            if regions is None:
                return self._one_by_one(fixes)
            pieces[apply.group_key(fix)] = regions
        if _spliced(self.target.text, [piece for regions in pieces.values() for piece in regions]) != new_code:
            return self._one_by_one(fixes)
        old = self.target.text
        return {
            key: [edit for (start, end), new in self._windows(regions) for edit in _hunks(old[start:end], new, start, self.lines)]
            for key, regions in pieces.items()
        }

    def _windows(self, regions: list[tuple[Range, str]]) -> list[tuple[Range, str]]:
        """The regions widened to whole lines, those on the same or neighbouring lines joined: the
        runs of changed lines a diff of the whole file would find, so edits come out as they would."""
        text, starts = self.target.text, self.lines.starts
        windows: list[tuple[Range, list[tuple[Range, str]]]] = []
        for (start, end), new in regions:
            first = starts[bisect.bisect_right(starts, start) - 1]
            row_of_end = bisect.bisect_right(starts, end) - 1
            last = end if end > start and starts[row_of_end] == end else (
                starts[row_of_end + 1] if row_of_end + 1 < len(starts) else len(text))
            if windows and first <= windows[-1][0][1]:
                (window_start, window_end), members = windows[-1]
                windows[-1] = ((window_start, max(window_end, last)), members + [((start, end), new)])
            else:
                windows.append(((first, last), [((start, end), new)]))
        return [((start, end), _spliced(text[start:end], [((a - start, b - start), new) for (a, b), new in members]))
                for (start, end), members in windows]

    def _regions(self, fix: Fix, new_code: str, new_ranges: dict[int, Range]) -> list[tuple[Range, str]] | None:
        """``(old range, new text)`` for each outermost node the fix replaces; ``None`` if a node went missing."""
        regions = []
        for original, replacement in fix.changes.items():
            old = self.old_ranges.get(id(original))
            if old is None:
                return None
            new_nodes = _replacement_nodes(replacement)
            found = [new_ranges.get(id(node)) for node in new_nodes]
            if any(r is None for r in found):
                return None
            new_text = new_code[min(r[0] for r in found): max(r[1] for r in found)] if found else ""  # type: ignore[index]
            regions.append((old, new_text))
        regions.sort(key=lambda region: (region[0][0], -region[0][1]))
        outermost: list[tuple[Range, str]] = []
        for region in regions:
            if outermost and region[0][0] < outermost[-1][0][1]:
                continue  # inside a node this fix replaces as a whole
            outermost.append(region)
        return outermost

    def _one_by_one(self, fixes: list[Fix]) -> dict[str, list[Edit]]:
        found = {}
        for fix in fixes:
            new = self.target.render(dict(fix.changes))
            if new is not None:
                found[apply.group_key(fix)] = _hunks(self.target.text, new, 0, self.lines)
        return found


def _spliced(text: str, pieces: list[tuple[Range, str]]) -> str:
    out, at = [], 0
    for (start, end), new in sorted(pieces, key=lambda piece: piece[0]):
        if start < at:
            return ""  # overlapping regions: cannot be one render's edits
        out.append(text[at:start])
        out.append(new)
        at = end
    out.append(text[at:])
    return "".join(out)


def edits_by_group(module: cst.Module, fixes: Sequence[Fix], text: str, positions=None) -> dict[str, list[Edit]]:
    """The edits of each fix group whose result parses; a group that does not parse is absent."""
    representatives: dict[str, Fix] = {}
    for fix in fixes:
        representatives.setdefault(apply.group_key(fix), fix)
    if not representatives:
        return {}
    if positions is None:
        from amplint.positions import Positions

        positions = Positions(module)
    target = apply.Target(module, text)
    originals = {id(node) for fix in representatives.values() for node in fix.changes}
    _, old_ranges = _record(module, originals)
    layer = _Layer(target, old_ranges, _Lines(text))
    found: dict[str, list[Edit]] = {}
    pending = _layers(list(representatives.values()), positions)
    while pending:
        members = pending.pop(0)
        accepted, _text, broken = apply.largest_valid(members, target.render)
        if accepted:
            found.update(layer.edits(accepted))
        decided = {id(fix) for fix in accepted} | {id(fix) for fix in broken}
        waiting = [fix for fix in members if id(fix) not in decided]
        if waiting:
            pending.insert(0, waiting)
    return found
