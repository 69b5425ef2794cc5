"""What every reporter is given (:class:`ReportContext`) and the rule names and links it prints."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from amplint.model import SYNTAX_ERROR_CODE, FileResult, Finding
from amplint.sourcefile import source_lines

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
