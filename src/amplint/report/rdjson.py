"""``--output-format rdjson``: reviewdog's Diagnostic JSON (``reviewdog -f=rdjson``).

reviewdog counts columns in UTF-8 bytes, so columns are converted from the code points
amplint reports, using the checked source; each fix edit becomes a suggestion.
"""

from __future__ import annotations

from typing import Sequence

from amplint.model import Finding, Location, Severity
from amplint.report.context import ReportContext, position_note, rule_url
from amplint.report.escape import dumps

SOURCE = {"name": "amplint", "url": "https://github.com/amplint/amplint"}
SEVERITIES = {Severity.ERROR: "ERROR", Severity.WARNING: "WARNING", Severity.INFO: "INFO"}


def _position(location: Location, lines: list[str]) -> dict:
    column = location.column
    if 0 < location.row <= len(lines):
        column = len(lines[location.row - 1][: column - 1].encode("utf-8", "surrogatepass")) + 1
    return {"line": location.row, "column": column}


def _range(start: Location, end: Location, lines: list[str]) -> dict:
    return {"start": _position(start, lines), "end": _position(end, lines)}


def diagnostic(finding: Finding, context: ReportContext) -> dict:
    lines = context.source_lines(finding.filename, finding.cell)
    start, end = context.file_span(finding)
    code = {"value": finding.code}
    url = rule_url(finding.code)
    if url:
        code["url"] = url
    value = {
        "message": position_note(finding) + finding.message,
        "location": {"path": context.display_name(finding.filename),
                     "range": _range(start, end, context.file_lines(finding))},
        "severity": SEVERITIES.get(finding.severity, "ERROR"),
        "code": code,
    }
    if finding.fix is not None and finding.fix.edits and context.applicable(finding):
        value["suggestions"] = [
            {"range": _range(edit.location, edit.end_location, lines), "text": edit.content} for edit in finding.fix.edits
        ]
    return value


def render(findings: Sequence[Finding], context: ReportContext) -> str:
    report = {"source": SOURCE, "diagnostics": [diagnostic(finding, context) for finding in findings]}
    return dumps(report, indent=2) + "\n"
