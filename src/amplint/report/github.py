"""``--output-format github``: GitHub Actions workflow-command annotations.

Escaping follows the runner's rules: in the message ``%``, ``\\r``, ``\\n``; in property
values also ``:`` and ``,``. The runner has no escape for any other character, and its log
viewer acts on ESC sequences and bidi overrides, so those are first made visible as on a
terminal (``\\r`` and ``\\n`` left to the runner's escapes, which keep them exact).
"""

from __future__ import annotations

from typing import Sequence

from amplint.model import Finding, Severity
from amplint.report.context import ReportContext, position_note, rule_name
from amplint.report.escape import terminal

_COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(value: str) -> str:
    return terminal(value, keep_line_breaks=True).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding, context: ReportContext) -> str:
    start, end = context.file_span(finding)
    props = (
        ("file", context.display_name(finding.filename)),
        ("line", str(start.row)),
        ("col", str(start.column)),
        ("endLine", str(end.row)),
        ("endColumn", str(end.column)),
        ("title", f"{finding.code} ({rule_name(finding.code)})"),
    )
    properties = ",".join(f"{key}={escape_property(value)}" for key, value in props)
    return f"::{_COMMANDS.get(finding.severity, 'error')} {properties}::{escape_data(position_note(finding) + finding.message)}"


def render(findings: Sequence[Finding], context: ReportContext) -> str:
    return "".join(annotation(finding, context) + "\n" for finding in findings)
