"""``--output-format json``: a list of findings shaped like ruff's JSON output."""

from __future__ import annotations

from typing import Sequence

from amplint.model import Finding
from amplint.report.context import ReportContext, rule_name, rule_url
from amplint.report.escape import dumps


def _location(location) -> dict:
    return {"row": location.row, "column": location.column}


def finding_dict(finding: Finding, context: ReportContext) -> dict:
    fix = None
    if finding.fix is not None:
        fix = {
            "applicability": finding.fix.applicability,
            "message": finding.fix.message,
            "edits": [
                {"content": edit.content, "location": _location(edit.location), "end_location": _location(edit.end_location)}
                for edit in finding.fix.edits
            ],
        }
    return {
        "code": finding.code,
        "name": rule_name(finding.code),
        "message": finding.message,
        "filename": context.absolute_name(finding.filename),
        "location": _location(finding.location),
        "end_location": _location(finding.end_location),
        "fix": fix,
        "url": rule_url(finding.code),
        "severity": finding.severity.value,
        "noqa_row": finding.noqa_row,
        "cell": finding.cell,
    }


def render(findings: Sequence[Finding], context: ReportContext) -> str:
    return dumps([finding_dict(f, context) for f in findings], indent=2) + "\n"


def render_statistics(rows: Sequence[dict], context: ReportContext) -> str:
    keys = ("code", "name", "count", "fixable")
    return dumps([{key: row[key] for key in keys} for row in rows], indent=2) + "\n"
