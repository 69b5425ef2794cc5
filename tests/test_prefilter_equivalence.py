"""The prefilter and the focused parse never change results: with and without them, findings are identical.

"The prefilter" is both the skip of whole files and, in a file that gets through, the skip of
each rule none of whose triggers occurs in it.

Runs over every fixture, and over the real-world bench corpus when it has been
downloaded (``python bench/corpus.py``; ``AMPLINT_BENCH_CACHE`` overrides the
location): every file the prefilter lets through, plus a fixed sample of the
files it skips.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from amplint.engine import lint_text, may_have_findings
from amplint.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
ON = Settings(select=("ALL",), prefilter=True)
OFF = Settings(select=("ALL",), prefilter=False)
CORPUS = Path(os.environ.get("AMPLINT_BENCH_CACHE", Path.home() / ".cache" / "amplint-bench")) / "src"


def _summary(text: str, name: str, settings: Settings) -> list[tuple]:
    result = lint_text(text, name, settings, edits=False)
    return [(f.code, f.location.row, f.location.column, f.message, f.fix is not None) for f in result.findings]


def _fixture_files() -> list[Path]:
    return sorted(p for p in (ROOT / "fixtures").rglob("*.py"))


@pytest.mark.parametrize("path", _fixture_files(), ids=lambda p: str(p.relative_to(ROOT / "fixtures")))
def test_fixture_results_do_not_depend_on_the_prefilter(path):
    text = path.read_text(encoding="utf-8")
    assert _summary(text, path.name, ON) == _summary(text, path.name, OFF)


def _corpus_sample() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    files = sorted(CORPUS.rglob("*.py"))
    survivors, skipped = [], []
    for path in files:
        data = path.read_bytes()
        (survivors if may_have_findings(data, ON, str(path)) else skipped).append(path)
    random.Random(20261130).shuffle(skipped)
    return survivors + skipped[:150]


def test_corpus_results_do_not_depend_on_the_prefilter():
    sample = _corpus_sample()
    if not sample:
        pytest.skip(f"bench corpus not downloaded at {CORPUS} (python bench/corpus.py)")
    differences = []
    for path in sample:
        text = path.read_text(encoding="utf-8", errors="replace")
        with_prefilter, without = _summary(text, str(path), ON), _summary(text, str(path), OFF)
        if with_prefilter != without:
            differences.append((str(path), with_prefilter, without))
    assert differences == []


def test_the_prefilter_searches_for_each_trigger_that_contains_no_other():
    # "Some trigger occurs" is the same question when a trigger that contains another is dropped.
    from amplint.rules.catalog import rule_catalog
    from amplint.selection import prefilter_for

    codes = frozenset(rule_catalog())
    declared = {t.encode("ascii") for rule in rule_catalog().values() for t in rule.triggers}
    searched = set(prefilter_for(codes))
    assert searched <= declared
    for token in declared - searched:
        assert any(kept in token for kept in searched), token
    for token in searched:
        assert not any(other != token and other in token for other in searched)
    assert {b"GradScaler", b"is_autocast_enabled"} <= declared - searched  # the two of today
