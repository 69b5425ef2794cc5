"""Fixture snapshots: what amplint reports on, and how it rewrites, each file under ``fixtures/``.

Each ``fixtures/<CODE>/<name>.py`` has two checked-in companions, produced by
``python scripts/update_snapshots.py``:

- ``<name>.py.snap``: the concise diagnostics with only ``<CODE>`` selected;
- ``<name>.py.fixed``: the text after ``--fix --unsafe-fixes`` with only ``<CODE>`` selected
  (only for files where a fix changed something).

Lines that carry a ``# expect: CODE`` comment are the planted findings: a fixture
reports on exactly those lines.
"""

from __future__ import annotations

import re
from pathlib import Path

from amplint.engine import lint_text
from amplint.settings import Settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
_EXPECT = re.compile(r"#\s*expect:\s*([A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)")


def rule_fixture_files(root: Path = FIXTURES, codes: tuple[str, ...] = ()) -> list[Path]:
    files = sorted(p for p in root.glob("AMP[0-9][0-9][0-9]/*.py"))
    return [p for p in files if not codes or p.parent.name in codes]


def code_of(path: Path) -> str:
    return path.parent.name


def settings_for(code: str) -> Settings:
    return Settings(select=(code,))


def diagnostics(path: Path, text: str | None = None) -> str:
    code = code_of(path)
    text = path.read_text(encoding="utf-8") if text is None else text
    result = lint_text(text, path.name, settings_for(code))
    lines = []
    for finding in result.findings:
        fix = "" if finding.fix is None else f" [fix: {finding.fix.applicability}]"
        note = f" ({finding.no_fix_reason})" if finding.fix is None and finding.no_fix_reason else ""
        lines.append(
            f"{finding.filename}:{finding.location.row}:{finding.location.column}: {finding.code} {finding.message}{fix}{note}"
        )
    for error in result.errors:
        lines.append(f"error: {error.message}")
    return "\n".join(lines) + ("\n" if lines else "")


def fixed_text(path: Path) -> str:
    code = code_of(path)
    text = path.read_text(encoding="utf-8")
    result = lint_text(text, path.name, settings_for(code), fix=True, unsafe=True)
    return result.source if result.source is not None else text


def expected_rows(text: str, code: str) -> list[int]:
    rows = []
    for index, line in enumerate(text.splitlines(), start=1):
        match = _EXPECT.search(line)
        if match and code in {c.strip() for c in match.group(1).split(",")}:
            rows.append(index)
    return rows


def update(root: Path = FIXTURES, codes: tuple[str, ...] = ()) -> list[Path]:
    written = []
    for path in rule_fixture_files(root, codes):
        snap = path.with_name(path.name + ".snap")
        snap.write_text(diagnostics(path), encoding="utf-8")
        written.append(snap)
        fixed = path.with_name(path.name + ".fixed")
        new = fixed_text(path)
        if new != path.read_text(encoding="utf-8"):
            fixed.write_text(new, encoding="utf-8")
            written.append(fixed)
        elif fixed.exists():
            fixed.unlink()
    return written
