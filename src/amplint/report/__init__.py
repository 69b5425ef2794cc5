"""Output formats for ``amplint check``; each reporter module is imported only when used.

A reporter module exposes ``render(findings, context) -> str`` (what goes to stdout) and, for
``--statistics``, optionally ``render_statistics(rows, context) -> str``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence

from amplint.model import Finding
from amplint.report.context import SYNTAX_ERROR_NAME, ReportContext, rule_name, rule_url

__all__ = ["ALIASES", "FORMATS", "HUMAN_FORMATS", "SYNTAX_ERROR_NAME", "ReportContext", "Reporter", "canonical_format",
           "get_reporter", "rule_name", "rule_url", "statistics"]

FORMATS = (
    "full",
    "concise",
    "grouped",
    "json",
    "json-lines",
    "junit",
    "github",
    "gitlab",
    "pylint",
    "azure",
    "sarif",
    "rdjson",
)
ALIASES = {"text": "full"}
# Formats read by people: they get the summary line and warnings on stderr.
HUMAN_FORMATS = frozenset({"full", "concise", "grouped"})

_MODULES = {
    "full": "text",
    "concise": "text",
    "grouped": "grouped",
    "json": "json",
    "json-lines": "json_lines",
    "junit": "junit",
    "github": "github",
    "gitlab": "gitlab",
    "pylint": "pylint",
    "azure": "azure",
    "sarif": "sarif",
    "rdjson": "rdjson",
}

class Reporter:
    def __init__(self, name: str, module) -> None:
        self.name = name
        self.module = module

    def render(self, findings: Sequence[Finding], context: ReportContext) -> str:
        return self.module.render(findings, context)

    def render_statistics(self, rows: Sequence[dict], context: ReportContext) -> str:
        renderer: Callable | None = getattr(self.module, "render_statistics", None)
        if renderer is None:
            import amplint.report.text as text

            renderer = text.render_statistics
        return renderer(rows, context)


def canonical_format(name: str) -> str:
    name = ALIASES.get(name, name)
    if name not in FORMATS:
        raise ValueError(f"unknown output format {name!r} (choose from {', '.join(FORMATS)})")
    return name


def get_reporter(name: str) -> Reporter:
    """The reporter for an output format, importing only its module."""
    name = canonical_format(name)
    module = importlib.import_module(f"amplint.report.{_MODULES[name]}")
    if name in ("full", "concise"):
        module = module.FULL if name == "full" else module.CONCISE
    return Reporter(name, module)


def statistics(findings: Sequence[Finding], context: ReportContext) -> list[dict]:
    """Count per code, most frequent first (then by code), like ``ruff --statistics``."""
    counts: dict[str, list[int]] = {}
    for finding in findings:
        entry = counts.setdefault(finding.code, [0, 0])
        entry[0] += 1
        entry[1] += context.applicable(finding)
    rows = [
        {"code": code, "name": rule_name(code), "count": count, "fixable": fixable > 0, "fixable_count": fixable}
        for code, (count, fixable) in counts.items()
    ]
    rows.sort(key=lambda row: (-row["count"], row["code"]))
    return rows
