"""Fix edits in reports (json, sarif) are exact: applied to the file they give what --fix writes."""

from __future__ import annotations

from amplint.engine import lint_text
from amplint.settings import Settings

SOURCE = """\
import torch
from torch.cuda.amp import GradScaler  # scaler for fp16


def build(enabled):
    # the scaler is created once per run
    return GradScaler(enabled=enabled)
"""


def _apply(text: str, edits) -> str:
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(location):
        return starts[location.row - 1] + location.column - 1

    for edit in sorted(edits, key=lambda e: offset(e.location), reverse=True):
        text = text[: offset(edit.location)] + edit.content + text[offset(edit.end_location):]
    return text


def test_one_fix_touching_two_places_is_two_small_edits():
    (finding,) = lint_text(SOURCE, "train.py", Settings(select=("AMP001",))).findings
    assert [(e.content, e.location.row, e.end_location.row) for e in finding.fix.edits] == [
        ("", 2, 2),
        ('"cuda", ', 7, 7),
    ]
    assert finding.fix.edits[0].location.column == 12  # "cuda." removed from torch.cuda.amp


def test_applying_the_edits_gives_the_fixed_text():
    (finding,) = lint_text(SOURCE, "train.py", Settings(select=("AMP001",))).findings
    fixed = lint_text(SOURCE, "train.py", Settings(select=("AMP001",)), fix=True).source
    assert _apply(SOURCE, finding.fix.edits) == fixed
    assert "from torch.amp import GradScaler  # scaler for fp16" in fixed
