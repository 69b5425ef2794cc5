"""amplint's findings and edits as LSP values, placed by the one converter, :mod:`amplint.lsp.convert`."""

from __future__ import annotations

import difflib
from typing import Sequence

from lsprotocol import types

from amplint.lsp.convert import LspPositions
from amplint.model import Edit, Finding, Severity

SOURCE = "amplint"
_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}


def diagnostic(positions: LspPositions, finding: Finding) -> types.Diagnostic:
    fix = finding.fix.applicability if finding.fix is not None else None
    return types.Diagnostic(
        range=positions.range(finding.location, finding.end_location),
        message=finding.message,
        severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Error),
        code=finding.code,
        source=SOURCE,
        data={"fix": fix},
    )


def text_edits(positions: LspPositions, edits: Sequence[Edit]) -> list[types.TextEdit]:
    return [types.TextEdit(range=positions.range(edit.location, edit.end_location), new_text=edit.content) for edit in edits]


def _lines_with_ends(positions: LspPositions) -> list[str]:
    starts = positions.line_starts + [len(positions.text)]
    lines = [positions.text[start:stop] for start, stop in zip(starts, starts[1:])]
    return lines if lines[-1] else lines[:-1]  # a text ending in a line end has no last chunk


def whole_text_edits(positions: LspPositions, new: str) -> list[types.TextEdit]:
    """Line-level edits turning ``positions.text`` into ``new``: what changed, so the editor keeps the rest."""
    old_lines = _lines_with_ends(positions)
    new_lines = _lines_with_ends(LspPositions(new))
    old_starts = positions.line_starts[: len(old_lines)] + [len(positions.text)]
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    return [
        types.TextEdit(
            # Through the converter: the end of a text without a final line end is not character 0.
            range=types.Range(start=positions.position_at(old_starts[i1]), end=positions.position_at(old_starts[i2])),
            new_text="".join(new_lines[j1:j2]),
        )
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def same_place(diagnostic: types.Diagnostic, other: types.Diagnostic) -> bool:
    return diagnostic.code == other.code and diagnostic.range.start == other.range.start


def not_linted(reason: str) -> types.Diagnostic:
    """The one diagnostic for a text amplint could not lint: no diagnostics would read as clean."""
    start = types.Position(line=0, character=0)
    return types.Diagnostic(
        range=types.Range(start=start, end=start),
        message=reason,
        severity=types.DiagnosticSeverity.Error,
        source=SOURCE,
    )
