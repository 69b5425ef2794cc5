"""Human output: ``full`` (source line, caret, fix hint) and ``concise`` (one line per finding)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Sequence

from amplint.model import Finding
from amplint.report import ReportContext


def headline(finding: Finding, context: ReportContext) -> str:
    marker = "[*] " if context.applicable(finding) else ""
    return (
        f"{finding.filename}:{finding.location.row}:{finding.location.column}: "
        f"{finding.code} {marker}{finding.message}"
    )


# Control characters (other than tab) would garble a terminal: show their Unicode pictures.
_CONTROL = {code: 0x2400 + code for code in range(32) if code != 9}
_CONTROL[127] = 0x2421


def _caret_line(line: str, finding: Finding) -> tuple[str, str]:
    start = max(1, finding.location.column)
    prefix = line[: start - 1]
    pad = "".join("\t" if char == "\t" else " " for char in prefix)
    if finding.end_location.row == finding.location.row:
        width = finding.end_location.column - start
    else:
        width = len(line) - start + 1
    return pad, "^" * max(1, width)


def _hint(finding: Finding, context: ReportContext) -> str | None:
    fix = finding.fix
    if fix is not None:
        if fix.applicability == "unsafe" and not context.unsafe_fixes:
            return f"= help: {fix.message} (unsafe fix: enable with --unsafe-fixes)"
        return f"= help: {fix.message}"
    if finding.no_fix_reason:
        return f"= note: {finding.no_fix_reason}"
    return None


def render_full(findings: Sequence[Finding], context: ReportContext) -> str:
    blocks: list[str] = []
    for finding in findings:
        lines = [headline(finding, context)]
        source = context.source_lines(finding.filename)
        row = finding.location.row
        hint = _hint(finding, context)
        if 0 < row <= len(source):
            line = source[row - 1].rstrip("\r\n").translate(_CONTROL)
            gutter = " " * len(str(row))
            pad, carets = _caret_line(line, finding)
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
