"""AMP100: a ``# noqa: AMP...`` directive that suppresses nothing.

Whether a directive was used is known only once every other rule has run on the file, so the
rule runs after them (``after_other_rules``, as ruff checks RUF100 after its rules) and reads
what their findings' directives suppressed from ``facts.suppressions``.
"""

from __future__ import annotations

import dataclasses
from textwrap import dedent
from typing import Iterator

import libcst as cst

import amplint.noqa as noqa
from amplint.fix import Fix
from amplint.model import FixSafety, Location, Severity
from amplint.rules.base import Invalid, Rule, Violation


class UnusedNoqa(Rule):
    """
    ## What it does
    Finds `# noqa: AMP...` comments that suppress nothing: the named amplint rule reports no
    finding on that line (any more), or the code is not an amplint rule at all. Codes of other
    tools (`# noqa: E501`) are never reported, nor is a bare `# noqa`, nor a code whose rule is not
    enabled for the file (amplint cannot tell whether that directive is still needed).

    Off by default, like ruff's `RUF100`: enable it with `--extend-select AMP100` or
    `extend-select = ["AMP100"]`.

    ## Why is this bad?
    A suppression that outlived its finding hides the next real finding on that line: once the
    training step is fixed, a new misuse written there is silenced without anyone noticing. Stale
    directives pile up after `--add-noqa` adopted amplint on a legacy code base, and removing them
    one by one is how the legacy findings are worked off.

    ## Example
    ```python
    import torch

    with torch.autocast("cuda"):  # noqa: AMP001
        pass
    ```

    ## Use instead
    ```python
    import torch

    with torch.autocast("cuda"):
        pass
    ```

    ## Fix safety
    The fix is safe: it removes only the unused amplint codes from the directive and keeps the
    other codes (`# noqa: E501, AMP003` becomes `# noqa: E501`) and any other comment text on the
    line. A directive left without codes is removed, and a comment left empty goes with the
    spaces before it. Code is never changed.

    ## References
    - [ruff: unused-noqa (RUF100)](https://docs.astral.sh/ruff/rules/unused-noqa/)
    - [flake8: selecting and ignoring violations](https://flake8.pycqa.org/en/latest/user/violations.html#in-line-ignoring-errors)
    """

    code = "AMP100"
    name = "unused-noqa"
    summary = "`# noqa` directive naming an amplint rule that reports nothing on its line"
    severity = Severity.WARNING
    fix_safety = FixSafety.SAFE
    default_enabled = False
    # The prefilter's literal test: no directive, nothing to report (other spellings are missed).
    triggers = ("noqa", "NOQA", "NoQA")
    # Only a directive that names an amplint code can be reported (a bare one or `# noqa: E501` never
    # is): a file without one is not parsed for this rule, as ruff reads RUF100's directives from
    # tokens alone. The codes are those the directive syntax in amplint.noqa accepts.
    requires_match = r"(?i)#\s*noqa\s*:\s*(?:[a-z]+[0-9]+[\s,]+)*amp[a-z]*[0-9]"
    # The rules whose findings the examples' directives are about.
    examples_also_select = ("AMP0",)

    valid = (
        dedent("""\
            import torch
            with torch.cuda.amp.autocast():  # noqa: AMP001
                pass
        """),
        dedent("""\
            import torch
            x = torch.ones(3)  # noqa: E501, F401
            y = x  # noqa
        """),
        dedent("""\
            import torch
            x = torch.ones(3)  # noqa: AMP005, AMP100
        """),
    )
    invalid = (
        Invalid(
            dedent("""\
                import torch
                x = torch.ones(3)  # noqa: AMP005
            """),
            fixed=dedent("""\
                import torch
                x = torch.ones(3)
            """),
        ),
        Invalid(
            dedent("""\
                import torch
                x = torch.ones(3)  # noqa: E501, AMP003
            """),
            fixed=dedent("""\
                import torch
                x = torch.ones(3)  # noqa: E501
            """),
        ),
        Invalid(
            dedent("""\
                import torch
                with torch.cuda.amp.autocast():  # type: ignore  # noqa: AMP001, AMP003 legacy
                    pass
            """),
            fixed=dedent("""\
                import torch
                with torch.cuda.amp.autocast():  # type: ignore  # noqa: AMP001 legacy
                    pass
            """),
        ),
        Invalid(
            dedent("""\
                import torch
                y = torch.zeros(1)  # noqa: AMP999 kept for the old loop
            """),
            fixed=dedent("""\
                import torch
                y = torch.zeros(1)  # kept for the old loop
            """),
        ),
    )

    after_other_rules = True

    def check(self) -> Iterator[Violation]:
        from amplint.rules.catalog import rule_catalog

        log = self.facts.suppressions
        if log is None or not log.respected or not log.directives.by_row():
            return
        known = rule_catalog()
        for trailing in self.facts.trailing_comments:
            comment = trailing.comment
            start = self.facts.position(comment).start
            row = start.line
            found = log.directives.on_row(row)
            # The libcst comment gives the fix its node; which directive the row has is the scan's call.
            if found is None or found.codes is None or found.column != start.column:
                continue
            match = found.match
            written = noqa.split_codes(match.group("codes"))
            unused, unknown = [], []
            for code in (item.upper() for item in written):
                if not code.startswith("AMP"):
                    continue  # another tool's code
                if code not in known:
                    unknown.append(code)
                elif code in log.enabled and (code in noqa.UNSUPPRESSIBLE or code not in log.used.get(row, ())):
                    unused.append(code)
            if not unused and not unknown:
                continue
            groups = (("unused", unused), ("unknown", unknown))
            parts = [f"{label}: {', '.join(f'`{code}`' for code in group)}" for label, group in groups if group]
            drop = {*unused, *unknown}
            new_value = without_codes(found.comment, match, [code for code in written if code.upper() not in drop])
            if new_value is None:
                change = {trailing: trailing.with_changes(whitespace=cst.SimpleWhitespace(""), comment=None)}
            else:
                change = {comment: cst.Comment(new_value)}
            violation = self.violation(
                comment, f"Unused `noqa` directive ({'; '.join(parts)})", Fix.safe("Remove unused `noqa` directive", change),
            )
            # The finding is the directive itself, not the whole comment it sits in.
            span = (Location(row, start.column + 1 + match.start()), Location(row, start.column + 1 + match.end()))
            yield dataclasses.replace(violation, span=span)


def without_codes(comment: str, match, kept: list[str]) -> str | None:
    """``comment`` with its directive reduced to ``kept`` codes; ``None`` when nothing is left of it."""
    before, after = comment[: match.start()], comment[match.end():]
    if kept:
        return before + comment[match.start(): match.start("codes")] + ", ".join(kept) + after
    before, after = before.rstrip(), after.strip()
    if after:
        after = after if after.startswith("#") else f"# {after}"
        return f"{before}  {after}" if before else after
    return before or None
