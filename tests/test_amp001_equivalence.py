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
# Fixtures whose .fixed holds an unsafe rewrite (one that may change behaviour): checked below.
UNSAFE = {"bad_nested_autocast"}
PAIRS = sorted(p for p in FIXTURES.glob("bad_*.py") if p.with_name(p.name + ".fixed").exists() and p.stem not in UNSAFE)


def _record(path: Path, tmp_path: Path, text: str | None = None) -> dict:
    script = tmp_path / "fixture_under_test.py"
    script.write_text(path.read_text(encoding="utf-8") if text is None else text, encoding="utf-8")
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


def _acting(events: list[dict]) -> list[dict]:
    """The recorded states without the CUDA dtype of a region where CUDA autocast is off."""
    return [{**e, "dtype": {**e["dtype"], "cuda": None}} if e.get("enabled", {}).get("cuda") is False else e for e in events]


def test_the_nested_autocast_keeps_its_dtype_under_the_safe_fix_and_not_under_the_unsafe_one(tmp_path):
    from amplint.api import fix_source

    original = FIXTURES / "bad_nested_autocast.py"
    before = _record(original, tmp_path)
    fixed = fix_source(original.read_text(encoding="utf-8"), settings={"select": ["AMP001"]})
    safe = _record(original, tmp_path, fixed)
    # Inside `enabled=False` the thread's CUDA dtype is inherited too, where the old class set float16:
    # nothing runs in it there, so the states are compared on what autocast does.
    assert (_acting(safe["events"]), safe["results"]) == (_acting(before["events"]), before["results"])
    # The two nested calls (in the bfloat16 region, and in the disabled one) are left to the author.
    assert fixed.count("with torch.cuda.amp.autocast():") == 2 and safe["deprecations"]
    # torch.amp.autocast("cuda") inside either bfloat16 region, the disabled one included, runs in the
    # bfloat16 it inherits where the old class ran float16 (main() runs twice: plain and under an autocast).
    unsafe = _record(original.with_name(original.name + ".fixed"), tmp_path)
    dtypes = [(e["dtype"]["cuda"], u["dtype"]["cuda"]) for e, u in zip(before["events"], unsafe["events"]) if u["enabled"]["cuda"]]
    assert dtypes.count(("torch.float16", "torch.bfloat16")) == 2 * 2
