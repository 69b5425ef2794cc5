"""``--output-format json-lines``: one JSON object per finding and line, as in ``--output-format json``."""

from __future__ import annotations

from typing import Sequence

from amplint.model import Finding
from amplint.report.context import ReportContext
from amplint.report.escape import dumps
from amplint.report.json import finding_dict
from amplint.report.json import render_statistics as render_statistics  # --statistics prints the json table


def render(findings: Sequence[Finding], context: ReportContext) -> str:
    return "".join(dumps(finding_dict(finding, context)) + "\n" for finding in findings)
