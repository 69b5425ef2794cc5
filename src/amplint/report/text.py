"""Human output: ``full`` (source line, caret, fix hint) and ``concise`` (one line per finding)."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

from amplint.model import Finding
from amplint.report.context import ReportContext
from amplint.report.escape import terminal


def _cell(finding: Finding) -> str:
    return f"cell {finding.cell}:" if finding.cell is not None else ""


def headline(finding: Finding, context: ReportContext) -> str:
    marker = "[*] " if context.applicable(finding) else ""
    return (
        f"{terminal(context.display_name(finding.filename))}:{_cell(finding)}{finding.location.row}:{finding.location.column}: "
        f"{finding.code} {marker}{terminal(finding.message)}"
    )


def _caret_line(line: str, finding: Finding) -> tuple[str, str, str]:
    """The source line as printed, and the padding and carets under the finding's span.

    Widths are measured on the printed text, where a control character may have become an
    escape several characters wide.
    """
    start = max(1, finding.location.column)
    if finding.end_location.row == finding.location.row:
        end = max(start + 1, finding.end_location.column)
    else:
        end = max(start + 1, len(line) + 1)
    covered = line[start - 1 : end - 1]
    prefix, span, rest = terminal(line[: start - 1]), terminal(covered), terminal(line[end - 1 :])
    pad = "".join("\t" if char == "\t" else " " for char in prefix)
    beyond_end = (end - start) - len(covered)  # a span may reach past the last character
    return prefix + span + rest, pad, "^" * max(1, len(span) + beyond_end)


def _hint(finding: Finding, context: ReportContext) -> str | None:
    fix = finding.fix
    if fix is not None:
        if fix.applicability == "unsafe" and not context.unsafe_fixes:
            return f"= help: {terminal(fix.message)} (unsafe fix: enable with --unsafe-fixes)"
        return f"= help: {terminal(fix.message)}"
    if finding.no_fix_reason:
        return f"= note: {terminal(finding.no_fix_reason)}"
    return None


def render_full(findings: Sequence[Finding], context: ReportContext) -> str:
    blocks: list[str] = []
    for finding in findings:
        lines = [headline(finding, context)]
        source = context.source_lines(finding.filename, finding.cell)
        row = finding.location.row
        hint = _hint(finding, context)
        if 0 < row <= len(source):
            gutter = " " * len(str(row))
            line, pad, carets = _caret_line(source[row - 1].rstrip("\r\n"), finding)
            lines.append(f"{gutter} |")
            lines.append(f"{row} | {line}".rstrip())
            lines.append(f"{gutter} | {pad}{carets} {finding.code}")
            lines.append(f"{gutter} |")
            if hint:
                lines.append(f"{gutter} {hint}")
        elif hint:
            lines.append(f"  {hint}")
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def render_concise(findings: Sequence[Finding], context: ReportContext) -> str:
    return "".join(headline(finding, context) + "\n" for finding in findings)


def render_statistics(rows: Sequence[dict], context: ReportContext) -> str:
    if not rows:
        return ""
    count_width = max(len(str(row["count"])) for row in rows)
    code_width = max(len(row["code"]) for row in rows)
    out = []
    for row in rows:
        marker = "[*]" if row["fixable"] else "[ ]"
        out.append(f"{row['count']:>{count_width}}\t{row['code']:<{code_width}}\t{marker} {row['name']}\n")
    return "".join(out)


FULL = SimpleNamespace(render=render_full, render_statistics=render_statistics)
CONCISE = SimpleNamespace(render=render_concise, render_statistics=render_statistics)
