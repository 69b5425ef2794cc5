"""``--output-format grouped``: findings under a header per file, like ``ruff --output-format grouped``."""

from __future__ import annotations

from itertools import groupby
from typing import Sequence

from amplint.model import Finding
from amplint.report.context import ReportContext
from amplint.report.escape import terminal
from amplint.report.text import _cell


def _group(filename: str, findings: list[Finding], context: ReportContext) -> str:
    # Notebook findings lead with their cell (``cell 3:4:5``), as concise and full show them.
    rows = [f"{_cell(f)}{f.location.row}" for f in findings]
    row_width = max(len(row) for row in rows)
    col_width = max(len(str(f.location.column)) for f in findings)
    lines = [f"{terminal(context.display_name(filename))}:"]
    for finding, row in zip(findings, rows):
        marker = "[*] " if context.applicable(finding) else ""
        position = f"{row:>{row_width}}:{finding.location.column:<{col_width}}"
        lines.append(f"  {position} {finding.code} {marker}{terminal(finding.message)}")
    return "\n".join(lines) + "\n"


def render(findings: Sequence[Finding], context: ReportContext) -> str:
    groups = groupby(findings, key=lambda finding: finding.filename)
    return "\n".join(_group(filename, list(items), context) for filename, items in groups)
