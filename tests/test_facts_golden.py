"""The facts every fixture yields are locked: restructuring the model must not change them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from amplint.amp import FileFacts
from facts_dump import dump

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
GOLDEN = Path(__file__).resolve().parent / "golden" / "facts"
GROUPS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir() and any(p.glob("*.py")))


def _dump_group(group: str) -> dict:
    out = {}
    for path in sorted((FIXTURES / group).glob("*.py")):
        facts = FileFacts.from_source(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
        out[path.name] = dump(facts)
    return out


@pytest.mark.parametrize("group", GROUPS)
def test_facts_match_the_golden_dump(group):
    actual = _dump_group(group)
    golden = GOLDEN / f"{group}.json"
    text = json.dumps(actual, indent=1, sort_keys=False) + "\n"
    if os.environ.get("AMPLINT_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    expected = json.loads(golden.read_text(encoding="utf-8"))
    for name in sorted(set(expected) | set(actual)):
        assert actual.get(name) == expected.get(name), f"facts of fixtures/{group}/{name} changed"


def test_every_fixture_group_has_a_golden_dump():
    assert sorted(p.stem for p in GOLDEN.glob("*.json")) == GROUPS
