"""What a report says of each fix: its safety and message, and for the formats that print
them, the text edits it makes."""

from __future__ import annotations

import libcst as cst

from amplint.fix.apply import PARSE_FAILURE_NOTE, group_key
from amplint.fix.model import Fix
from amplint.model import Finding, FixInfo


def attach_fix_info(module: cst.Module, fixes: list[tuple[Finding, Fix]], text: str, edits: bool, positions=None) -> None:
    """Describe each live fix; with ``edits``, also as concrete text edits (json, sarif).

    Edits cost a render of the module per set of non-overlapping fixes (a few per file), so
    only formats that print them ask.
    """
    if not edits:
        for finding, fix in fixes:
            finding.fix = FixInfo(fix.applicability, fix.message, [])
        return
    from amplint.fix.text_edits import edits_by_group

    by_group = edits_by_group(module, [fix for _, fix in fixes], text, positions)
    for finding, fix in fixes:
        found = by_group.get(group_key(fix))
        if found is None:
            finding.no_fix_reason = PARSE_FAILURE_NOTE
            continue
        finding.fix = FixInfo(fix.applicability, fix.message, found)
