"""What the rule pages, `amplint rules` and the README say about each rule's fix is what the fixtures show.

"always" means every finding of the rule in the fixtures and its `invalid` examples has a fix, "sometimes" that some have
one and some do not, "no" that none has; "safe" / "unsafe" are the applicabilities of the fixes
offered, "safe or unsafe" that both occur.
"""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache
from pathlib import Path

import pytest

from amplint.engine import lint_text
from amplint.report.ruledoc import all_rule_rows
from amplint.rules import all_rules
from amplint.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
ROWS = [row for row in all_rule_rows() if row["code"] != "AMP000"]


@lru_cache(maxsize=1)
def _fixes_seen() -> dict[str, list[str | None]]:
    """Per code, the applicability of the fix of each finding in the fixtures and the rules'
    `invalid` examples (None: no fix)."""
    seen: dict[str, list[str | None]] = defaultdict(list)

    def record(text: str, name: str, settings: Settings, code: str | None = None) -> None:
        for finding in lint_text(text, name, settings).findings:
            if code is None or finding.code == code:
                seen[finding.code].append(finding.fix.applicability if finding.fix is not None else None)

    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        record(path.read_text(encoding="utf-8"), path.name, Settings(select=("ALL",)))
    for code, rule in all_rules().items():
        settings = Settings(select=(code, *getattr(rule, "examples_also_select", ())))
        for example in rule.invalid:
            record(example if isinstance(example, str) else example.code, "example.py", settings, code)
    return seen


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row["code"])
def test_the_stated_fix_availability_is_what_the_fixtures_show(row):
    seen = _fixes_seen()[row["code"]]
    assert seen, f"{row['code']} has no finding in fixtures/ or its invalid examples"
    offered = {applicability for applicability in seen if applicability is not None}
    withheld = None in seen
    availability = row["fix_availability"]
    if availability == "never":
        assert not offered, f"{row['code']} says no fix but offers {offered}"
        return
    assert offered, f"{row['code']} says a fix is {availability} available, none was offered"
    if availability == "always":
        assert not withheld, f"{row['code']} says 'always' but some findings have no fix: set fix_withheld"
    else:
        assert withheld, f"{row['code']} says 'sometimes' but every finding has a fix"
        assert row["fix_withheld"], row["code"]
    expected = {"safe": {"safe"}, "unsafe": {"unsafe"}, "sometimes": {"safe", "unsafe"}}[row["fixable"]]
    assert offered == expected, f"{row['code']} is documented {row['fixable']!r}, its fixes are {offered}"


def test_the_rule_page_names_when_no_fix_is_offered():
    from amplint.report.ruledoc import render_rule

    page = render_rule("AMP006")
    assert "Fix is sometimes available (safe when the rule can prove it, else unsafe; none when the scaler may be `None`" in page
    assert "Fix is always available (safe)." in render_rule("AMP020")
    assert "Fix is not available." in render_rule("AMP013")
