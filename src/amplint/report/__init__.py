"""Output formats for ``amplint check``; each reporter module is imported only when used.

A reporter module exposes ``render(findings, context) -> str`` (what goes to stdout) and, for
``--statistics``, optionally ``render_statistics(rows, context) -> str``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from amplint.model import SYNTAX_ERROR_CODE, FileResult, Finding
from amplint.sourcefile import source_lines

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

SYNTAX_ERROR_NAME = "syntax-error"


@dataclass
class ReportContext:
    """What a reporter is given: the results and how the run was asked for."""

    results: Sequence[FileResult] = ()
    mode: str = "check"  # "check" | "fix" | "diff"
    unsafe_fixes: bool = False
    show_fixes: bool = False
    paths: dict[str, str] = field(default_factory=dict)  # displayed name -> absolute path
    format: str = "full"

    def source_lines(self, filename: str, cell: int | None = None) -> list[str]:
        """The lines of the file (or of one notebook cell) a finding refers to."""
        cache = self.__dict__.setdefault("_lines", {})
        if (filename, cell) not in cache:
            text = None
            for r in self.results:
                if r.filename == filename:
                    text = (r.cell_sources or {}).get(cell) if cell is not None else r.source
                    if text is not None:
                        break
            # Only \n, \r\n and \r end a line for the parser (str.splitlines also splits on \f, \x1c...).
            cache[filename, cell] = source_lines(text) if text is not None else []
        return cache[filename, cell]

    def display_name(self, filename: str) -> str:
        """The name a finding is reported under, as text any output encoding accepts."""
        from amplint.report.escape import path_text

        return path_text(filename)

    def absolute_name(self, filename: str) -> str:
        """The absolute path of a reported file (the name itself when unknown), as text."""
        from amplint.report.escape import path_text

        return path_text(self.paths.get(filename, filename))

    def applicable(self, finding: Finding) -> bool:
        """Whether ``--fix`` (with the flags of this run) would apply the finding's fix."""
        fix = finding.fix
        return fix is not None and (fix.applicability == "safe" or self.unsafe_fixes)


class Reporter:
    def __init__(self, name: str, module) -> None:
        self.name = name
        self.module = module

    def render(self, findings: Sequence[Finding], context: ReportContext) -> str:
        return self.module.render(findings, context)

    def render_statistics(self, rows: Sequence[dict], context: ReportContext) -> str:
        renderer: Callable | None = getattr(self.module, "render_statistics", None)
        if renderer is None:
            from amplint.report import text

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


def rule_name(code: str) -> str:
    from amplint.rules.catalog import rule_catalog

    rule = rule_catalog().get(code)
    if rule is not None:
        return rule.name
    return SYNTAX_ERROR_NAME if code == SYNTAX_ERROR_CODE else code


def rule_url(code: str) -> str | None:
    from amplint.rules.catalog import rule_catalog

    rule = rule_catalog().get(code)
    return rule.url() if rule is not None else None


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
