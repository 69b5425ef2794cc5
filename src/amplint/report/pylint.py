"""``--output-format pylint``: ``path:line: [CODE] message``, the line format pylint's parsers read
(``path:cell 3:line: ...`` in a notebook, as ruff writes it)."""

from __future__ import annotations

from typing import Sequence

from amplint.model import Finding
from amplint.report.context import ReportContext
from amplint.report.escape import terminal
from amplint.report.text import _cell


def render(findings: Sequence[Finding], context: ReportContext) -> str:
    return "".join(
        f"{terminal(context.display_name(f.filename))}:{_cell(f)}{f.location.row}: [{f.code}] {terminal(f.message)}\n"
        for f in findings
    )
