"""amplint's findings and edits as LSP values.

amplint counts 1-based rows and columns in code points; LSP counts 0-based lines and, by
default, UTF-16 code units, which differ on lines with characters outside the BMP (emoji).
"""

from __future__ import annotations

import difflib
from typing import Sequence

from lsprotocol import types

from amplint.model import Edit, Finding, Location, Severity

SOURCE = "amplint"
_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}


def _utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def position(lines: Sequence[str], location: Location) -> types.Position:
    line = location.row - 1
    column = location.column - 1
    if 0 <= line < len(lines):
        return types.Position(line=line, character=_utf16_units(lines[line][:column]))
    return types.Position(line=max(line, 0), character=column)


def diagnostic(lines: Sequence[str], finding: Finding) -> types.Diagnostic:
    start = position(lines, finding.location)
    end = position(lines, finding.end_location)
    fix = finding.fix.applicability if finding.fix is not None else None
    return types.Diagnostic(
        range=types.Range(start=start, end=end),
        message=finding.message,
        severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Error),
        code=finding.code,
        source=SOURCE,
        data={"fix": fix},
    )


def text_edits(lines: Sequence[str], edits: Sequence[Edit]) -> list[types.TextEdit]:
    return [
        types.TextEdit(
            range=types.Range(start=position(lines, edit.location), end=position(lines, edit.end_location)),
            new_text=edit.content,
        )
        for edit in edits
    ]


def whole_text_edits(old: str, new: str) -> list[types.TextEdit]:
    """Line-level edits turning ``old`` into ``new``: what changed, so the editor keeps the rest."""
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    edits = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            edits.append(
                types.TextEdit(
                    range=types.Range(start=types.Position(line=i1, character=0), end=types.Position(line=i2, character=0)),
                    new_text="".join(new_lines[j1:j2]),
                )
            )
    return edits


def same_place(diagnostic: types.Diagnostic, other: types.Diagnostic) -> bool:
    return diagnostic.code == other.code and diagnostic.range.start == other.range.start
