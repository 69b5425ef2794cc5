"""Snapshot tests over fixtures/<CODE>/: diagnostics, fixed text, planted lines, convergence.

Refresh after an intended change: ``python scripts/update_snapshots.py``.
"""

from __future__ import annotations

import libcst as cst
import pytest

from amplint.engine import lint_text
from snapshots import code_of, diagnostics, expected_rows, fixed_text, rule_fixture_files, settings_for

FILES = rule_fixture_files()


def _id(path):
    return f"{path.parent.name}/{path.name}"


@pytest.mark.parametrize("path", FILES, ids=[_id(p) for p in FILES])
def test_diagnostics_match_snapshot(path):
    snap = path.with_name(path.name + ".snap")
    assert snap.exists(), f"missing {snap.name}: run python scripts/update_snapshots.py"
    assert diagnostics(path) == snap.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", FILES, ids=[_id(p) for p in FILES])
def test_reports_exactly_the_planted_lines(path):
    code = code_of(path)
    text = path.read_text(encoding="utf-8")
    rows = sorted({f.noqa_row for f in lint_text(text, path.name, settings_for(code)).findings})
    assert rows == expected_rows(text, code)
    if path.name.startswith("good"):
        assert rows == []
    else:
        assert rows, "a bad fixture must plant at least one finding"


@pytest.mark.parametrize("path", FILES, ids=[_id(p) for p in FILES])
def test_fixed_text_matches_snapshot_parses_and_converges(path):
    fixed_file = path.with_name(path.name + ".fixed")
    new = fixed_text(path)
    if not fixed_file.exists():
        assert new == path.read_text(encoding="utf-8")
        return
    assert new == fixed_file.read_text(encoding="utf-8")
    cst.parse_module(new)
    code = code_of(path)
    again = lint_text(new, path.name, settings_for(code), fix=True, unsafe=True)
    assert again.source == new, "a second --fix must change nothing"
