"""Plain data shared by the engine, the rules, the reporters and the cache.

Everything here is picklable and JSON-friendly so findings can cross process
boundaries and be cached without carrying syntax trees along.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum

TYPE_CHECKING = False  # typing itself is not imported: a clean run does not need it
if TYPE_CHECKING:
    from typing import Any


SYNTAX_ERROR_CODE = "AMP000"  # reserved: the file is not valid Python (or cannot be linted)


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class FixSafety(str, Enum):
    """What a rule's fix promises, as documented for the rule."""

    NONE = "none"
    SAFE = "safe"
    UNSAFE = "unsafe"
    SOMETIMES = "sometimes"  # safe when the rule can prove it, otherwise unsafe (Rule.fix_withheld: when none)


class Applicability(str, Enum):
    """Whether one fix may be applied by ``--fix`` alone, or needs ``--unsafe-fixes``."""

    SAFE = "safe"
    UNSAFE = "unsafe"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Location:
    """A position in a file, as reports show it."""

    row: int  # 1-based
    column: int  # 1-based


@dataclass(frozen=True)
class Edit:
    """Replace the text between ``location`` and ``end_location`` with ``content``."""

    content: str
    location: Location
    end_location: Location


@dataclass
class FixInfo:
    """A fix as reported to users: applicability, a message and concrete text edits."""

    applicability: Applicability
    message: str
    edits: list[Edit] = field(default_factory=list)


@dataclass
class Finding:
    """One reported problem: a rule's code and message at a place in a file, and its fix if any."""

    code: str
    message: str
    filename: str
    location: Location
    end_location: Location
    severity: Severity = Severity.ERROR
    fix: FixInfo | None = None
    # Why a rule that usually fixes could not fix this one (shown to users).
    no_fix_reason: str | None = None
    noqa_row: int | None = None  # the row whose ``# noqa`` comment applies
    cell: int | None = None  # notebooks: the cell (from 1) that ``location`` rows count within

    @property
    def fixable(self) -> bool:
        return self.fix is not None

    def sort_key(self) -> tuple:
        return (self.filename, self.cell or 0, self.location.row, self.location.column, self.code)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["severity"] = self.severity.value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Finding":
        fix = data.get("fix")
        return cls(
            code=data["code"],
            message=data["message"],
            filename=data["filename"],
            location=Location(**data["location"]),
            end_location=Location(**data["end_location"]),
            severity=Severity(data["severity"]),
            fix=None
            if fix is None
            else FixInfo(
                applicability=Applicability(fix["applicability"]),
                message=fix["message"],
                edits=[
                    Edit(
                        content=e["content"],
                        location=Location(**e["location"]),
                        end_location=Location(**e["end_location"]),
                    )
                    for e in fix["edits"]
                ],
            ),
            no_fix_reason=data.get("no_fix_reason"),
            noqa_row=data.get("noqa_row"),
            cell=data.get("cell"),
        )


@dataclass
class FileError:
    """A problem with a whole file or path: unreadable, undecodable, internal error."""

    filename: str
    message: str
    internal: bool = False  # an amplint bug (exit 2) rather than bad input
    warning: bool = False  # the file was linted, but its fixes were not written


@dataclass
class FileResult:
    """What linting (or fixing) one file gave: findings, errors and, after fixes, the new text."""

    filename: str
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    source: str | None = None  # the text the findings refer to (after fixes, if any)
    original_source: str | None = None  # set when fixes changed the text
    fixed_count: int = 0  # findings removed by applied fixes
    skipped: bool = False  # prefilter decided nothing can match
    cell_sources: dict[int, str] | None = None  # notebooks: each code cell's text, by cell number
    # --fix, when the caller writes after the whole run: (path, bytes read, new bytes or, for a
    # notebook, its new JSON text). None: nothing to write, or already written.
    pending_write: tuple | None = None

    @property
    def changed(self) -> bool:
        return self.original_source is not None and self.original_source != self.source
