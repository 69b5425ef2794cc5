"""The AMP001 rewrite keeps behaviour: original and fixed fixtures build the same AMP configuration."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

pytest.importorskip("torch", reason="the equivalence test needs torch (installed by .ci/run)")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "AMP001"
HARNESS = Path(__file__).with_name("amp_state_harness.py")
PAIRS = sorted(p for p in FIXTURES.glob("bad_*.py") if p.with_name(p.name + ".fixed").exists())


def _record(path: Path, tmp_path: Path) -> dict:
    script = tmp_path / "fixture_under_test.py"
    script.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, str(HARNESS), str(script)], capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


def test_every_fixable_fixture_is_covered():
    assert len(PAIRS) >= 8


@pytest.mark.parametrize("original", PAIRS, ids=[p.stem for p in PAIRS])
def test_fixed_fixture_builds_the_same_amp_configuration(original, tmp_path):
    before = _record(original, tmp_path)
    after = _record(original.with_name(original.name + ".fixed"), tmp_path)
    assert before["events"] or before["results"], "the fixture must exercise the AMP API"
    assert after["events"] == before["events"]
    assert after["results"] == before["results"]
    # The original used deprecated calls; the rewrite leaves none behind.
    assert before["deprecations"], "the original should trigger a deprecation warning"
    assert after["deprecations"] == []
