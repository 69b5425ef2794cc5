"""What every reporter is given (:class:`ReportContext`) and the rule names and links it prints."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from amplint.model import SYNTAX_ERROR_CODE, FileResult, Finding, Location
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

    def _positions(self, filename: str):
        """The cell-to-JSON mapping of a notebook that was reported (``None`` for any other file)."""
        cache = self.__dict__.setdefault("_positions_cache", {})
        if filename not in cache:
            from amplint.notebook_positions import notebook_positions

            result = next((r for r in self.results if r.filename == filename and r.cell_sources is not None), None)
            cache[filename] = notebook_positions(result.source) if result is not None and result.source else None
        return cache[filename]

    def file_span(self, finding: Finding) -> tuple[Location, Location]:
        """Where a finding is in the file a CI service is given: for a notebook, the lines and
        columns of its JSON text that hold the cell's code (its first line if that cannot be
        told); for any other file, the finding's own span."""
        if finding.cell is None:
            return finding.location, finding.end_location
        positions = self._positions(finding.filename)
        start = end = None
        if positions is not None:
            start = positions.file_position(finding.cell, finding.location.row, finding.location.column)
            end = positions.file_position(finding.cell, finding.end_location.row, finding.end_location.column)
        if start is None or end is None:
            return Location(1, 1), Location(1, 1)
        return Location(*start), Location(*end)

    def file_lines(self, finding: Finding) -> list[str]:
        """The lines of the file :meth:`file_span` counts in."""
        if finding.cell is None:
            return self.source_lines(finding.filename)
        positions = self._positions(finding.filename)
        return positions.file_lines() if positions is not None else []

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


def position_note(finding: Finding) -> str:
    """``"cell 3, line 4: "`` for a notebook finding, to lead the message of a format whose
    location is a line of the notebook's JSON file; ``""`` for any other file."""
    return f"cell {finding.cell}, line {finding.location.row}: " if finding.cell is not None else ""


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
