"""``--output-format azure``: Azure Pipelines ``##vso[task.logissue]`` logging commands.

The agent decodes ``%AZP25`` (``%``), ``%0D`` and ``%0A`` in the message; in property values also
``%3B`` (``;``) and ``%5D`` (``]``), which would otherwise end the property or the command.
Every other controlling character (ESC, BEL, C1, bidi overrides, line separators) has no such
escape and is made visible as on a terminal before that.
"""

from __future__ import annotations

from typing import Sequence

from amplint.model import Finding, Severity
from amplint.report.context import ReportContext, position_note
from amplint.report.escape import terminal

# Azure knows only errors and warnings.
_TYPES = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "warning"}


def escape_data(value: str) -> str:
    return terminal(value, keep_line_breaks=True).replace("%", "%AZP25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(";", "%3B").replace("]", "%5D")


def logissue(finding: Finding, context: ReportContext) -> str:
    start, _ = context.file_span(finding)
    props = (
        ("type", _TYPES.get(finding.severity, "error")),
        ("sourcepath", context.display_name(finding.filename)),
        ("linenumber", str(start.row)),
        ("columnnumber", str(start.column)),
        ("code", finding.code),
    )
    properties = "".join(f"{key}={escape_property(value)};" for key, value in props)
    return f"##vso[task.logissue {properties}]{escape_data(position_note(finding) + finding.message)}"


def render(findings: Sequence[Finding], context: ReportContext) -> str:
    return "".join(logissue(finding, context) + "\n" for finding in findings)
