"""``--output-format gitlab``: a GitLab Code Quality report (``artifacts:reports:codequality``).

Paths are relative to ``$CI_PROJECT_DIR`` when set (GitLab links them to the repository), else
to the current directory. A fingerprint must stay the same while a finding stays, so that a
merge request shows only new and fixed findings: it hashes the code, the path and the text of
the reported line, not its number, and counts repeats of the same three in file order.
"""

from __future__ import annotations

import hashlib
import os
from typing import Sequence

from amplint.model import Finding, Severity
from amplint.report.context import ReportContext, position_note, rule_name
from amplint.report.escape import dumps, path_text

SEVERITIES = {Severity.ERROR: "major", Severity.WARNING: "minor", Severity.INFO: "info"}


def report_path(filename: str, context: ReportContext) -> str:
    project_dir = os.environ.get("CI_PROJECT_DIR")
    if not project_dir:
        return context.display_name(filename)
    absolute = context.paths.get(filename, os.path.abspath(filename))
    try:
        relative = os.path.relpath(absolute, project_dir)
    except ValueError:  # pragma: no cover - another drive on Windows
        relative = absolute
    return path_text(relative).replace(os.sep, "/")


def _line_text(finding: Finding, context: ReportContext) -> str:
    lines = context.source_lines(finding.filename, finding.cell)
    row = finding.location.row
    return " ".join(lines[row - 1].split()) if 0 < row <= len(lines) else ""


def fingerprint(code: str, path: str, line_text: str, occurrence: int) -> str:
    key = "\0".join((code, path, line_text, str(occurrence)))
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _position(location) -> dict:
    return {"line": location.row, "column": location.column}


def issue(finding: Finding, path: str, finding_fingerprint: str, context: ReportContext) -> dict:
    start, end = context.file_span(finding)
    return {
        "type": "issue",
        "check_name": finding.code,
        # GitLab's widget shows the description but not check_name.
        "description": f"{finding.code} ({rule_name(finding.code)}): {position_note(finding)}{finding.message}",
        "categories": ["Bug Risk"],
        "severity": SEVERITIES.get(finding.severity, "major"),
        "fingerprint": finding_fingerprint,
        "location": {
            "path": path,
            "positions": {"begin": _position(start), "end": _position(end)},
        },
    }


def render(findings: Sequence[Finding], context: ReportContext) -> str:
    seen: dict[tuple[str, str, str], int] = {}
    issues = []
    for finding in findings:
        path = report_path(finding.filename, context)
        key = (finding.code, path, _line_text(finding, context))
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        issues.append(issue(finding, path, fingerprint(*key, occurrence), context))
    return dumps(issues, indent=2) + "\n"
