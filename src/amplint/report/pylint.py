"""``--output-format pylint``: ``path:line: [CODE] message``, the line format pylint's parsers read.

In a notebook the line is the one of the ``.ipynb`` JSON file that holds the flagged code (a
line the parsers of CI services and editors can open) and the message leads with the cell's
own position: ``train.ipynb:57: [AMP001] cell 3, line 4: ...``.
"""

from __future__ import annotations

from typing import Sequence

from amplint.model import Finding
from amplint.report.context import ReportContext, position_note
from amplint.report.escape import terminal


def render(findings: Sequence[Finding], context: ReportContext) -> str:
    return "".join(
        f"{terminal(context.display_name(f.filename))}:{context.file_span(f)[0].row}: [{f.code}] "
        f"{terminal(position_note(f) + f.message)}\n"
        for f in findings
    )
