"""Runtime findings are the linter's :class:`amplint.model.Finding`, pointed at one line.

The verify report keeps its own JSON shape (``code``, ``message``, ``path``, ``line``,
``severity``) so CI consumers of earlier reports keep working; the full linter form is what
crosses the process boundary between a run and the report.
"""

from __future__ import annotations

from typing import Any

from amplint.model import Finding, Location, Severity

from .rule_info import rule_info


def make_finding(code: str, detail: str, path: str, line: int) -> Finding:
    """The rule's summary, then what was seen at runtime."""
    info = rule_info(code)
    where = Location(max(line, 1), 1)
    return Finding(code, f"{info.summary}: {detail}", path, where, where, Severity.ERROR)


def finding_key(finding: Finding) -> tuple[str, str, int]:
    return (finding.code, finding.filename, finding.location.row)


def sort_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (f.filename, f.location.row, f.code))


def report_dict(finding: Finding) -> dict[str, Any]:
    return {
        "code": finding.code,
        "message": finding.message,
        "path": finding.filename,
        "line": finding.location.row,
        "severity": finding.severity.value,
    }


def format_finding(finding: Finding) -> str:
    return f"{finding.filename}:{finding.location.row}: {finding.code} {finding.message}"
