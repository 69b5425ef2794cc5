"""What every generated or mutated program must satisfy, and the hypothesis profiles that feed them.

Profiles (``HYPOTHESIS_PROFILE``): ``ci`` (the default) is derandomized, so a CI run sees the
same examples every time and cannot turn red by chance; ``long`` is the hand-run profile whose
result docs/reliability.md records (``FUZZ_EXAMPLES`` overrides its example count).
"""

from __future__ import annotations

import ast
import os
import warnings

from hypothesis import HealthCheck, event, settings

from amplint import api
from amplint.engine import lint_text
from amplint.settings import Settings
from amplint.sourcefile import source_lines

_SLOW_INPUT = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much, HealthCheck.large_base_example]

settings.register_profile("ci", max_examples=40, derandomize=True, deadline=None, database=None,
                          suppress_health_check=_SLOW_INPUT, print_blob=True)
settings.register_profile("long", max_examples=int(os.environ.get("FUZZ_EXAMPLES", "1200")), deadline=None,
                          database=None, suppress_health_check=_SLOW_INPUT, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

ALL_RULES = Settings(select=("ALL",))
NO_PREFILTER = Settings(select=("ALL",), prefilter=False)


def compiles(code: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(code, "<fuzz>", "exec", ast.PyCF_ONLY_AST)
    except (SyntaxError, ValueError):
        return False
    except (RecursionError, MemoryError):  # too deep for this interpreter's own parser: no verdict
        return True
    return True


def _assert_inside(code: str, findings) -> None:
    lines = source_lines(code)
    for finding in findings:
        start, end = finding.location, finding.end_location
        assert 1 <= start.row <= len(lines), finding
        assert 1 <= start.column <= len(lines[start.row - 1]) + 1, finding
        assert 1 <= end.row <= len(lines) and 1 <= end.column <= len(lines[end.row - 1]) + 1, finding
        assert (start.row, start.column) <= (end.row, end.column), finding
        assert finding.noqa_row is None or 1 <= finding.noqa_row <= len(lines), finding


def _offset(lines: list[str], code: str, location) -> int:
    return sum(len(line) for line in lines[: location.row - 1]) + location.column - 1


def apply_edits(code: str, edits) -> str:
    """``code`` with a fix's edits applied (they must not overlap)."""
    import re

    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n|$)", code)
    spans = sorted((_offset(lines, code, e.location), _offset(lines, code, e.end_location), e.content) for e in edits)
    out, at = [], 0
    for start, end, content in spans:
        assert at <= start <= end, f"overlapping edits {edits}"
        out += [code[at:start], content]
        at = end
    return "".join(out + [code[at:]])


def check_program(code: str) -> None:
    """Lint and fix ``code`` the ways a user can, and check what must always hold."""
    valid = compiles(code)
    event("compiles" if valid else "rejected by Python")  # tallied by --hypothesis-show-statistics
    for options in (ALL_RULES, NO_PREFILTER):
        findings = api.lint_source(code, "fuzz.py", options)
        _assert_inside(code, findings)
        result = lint_text(code, "fuzz.py", options, edits=True)
        assert not [e for e in result.errors if e.internal], result.errors
        _assert_inside(code, result.findings)
        for finding in result.findings:
            if finding.fix is not None and finding.fix.edits:
                # Each fix reported with edits gives code that still parses when applied alone.
                assert compiles(apply_edits(code, finding.fix.edits)) or not valid, finding
    fixed = api.fix_source(code, "fuzz.py", ALL_RULES, unsafe=True)
    if not valid:
        assert fixed == code, "a file this Python rejects was rewritten"
        return
    assert compiles(fixed), f"the fix does not compile:\n{fixed}"
    if fixed != code:
        event("fixed")
    assert api.fix_source(fixed, "fuzz.py", ALL_RULES, unsafe=True) == fixed, "a second fix pass changed the text"
