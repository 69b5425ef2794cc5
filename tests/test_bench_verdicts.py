"""The hand-review verdicts of the real-world corpus, and the per-rule table built from them.

bench/review-verdicts.json is edited by hand after each review; these tests keep it loadable
and pointing at pinned packages, and check that the table counts a re-run against it the way
docs/accuracy.md and bench/README.md say (fixed, lost, unreviewed, misses closed).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
import corpus  # noqa: E402  (bench scripts are not a package)
import verdicts  # noqa: E402

KEY = re.compile(r"^(?P<package>[^/]+)/(?P<file>.+\.py):(?P<row>[0-9]+):(?P<code>AMP[0-9]{3})$")
PINNED = {f"{name}-{version}" for name, version in corpus.SETS["all"]}


def test_verdict_file_loads_and_names_pinned_packages():
    review = verdicts.load(BENCH / "review-verdicts.json")
    assert review["findings"], "the review has verdicts"
    for key in review["findings"]:
        match = KEY.match(key)
        assert match, key
        assert match["package"] in PINNED, key
    for miss in review["misses"]:
        assert miss["package"] in PINNED, miss
        assert re.fullmatch(r"AMP[0-9]{3}", miss["rule"]), miss
        spans = verdicts._spans(miss["rows"])
        assert spans and all(first <= last for first, last in spans), miss
        assert miss["why"].strip(), miss


def test_a_verdict_other_than_true_or_false_is_refused(tmp_path):
    path = tmp_path / "v.json"
    path.write_text('{"findings": {"p-1/a.py:3:AMP001": {"verdict": "maybe"}}}', encoding="utf-8")
    with pytest.raises(ValueError, match="verdict must be one of"):
        verdicts.load(path)


def _row(table: list[str], code: str) -> list[str]:
    line = next(line for line in table if line.startswith(f"| {code}"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_table_counts_a_rerun_against_the_review():
    review = {
        "findings": {
            "pkg-1/train.py:10:AMP006": {"verdict": "true", "why": ""},
            "pkg-1/train.py:20:AMP006": {"verdict": "false", "why": ""},
            "pkg-1/train.py:30:AMP006": {"verdict": "false", "why": "fixed since"},
            "pkg-1/train.py:40:AMP006": {"verdict": "true", "why": "lost since"},
            "other-2/x.py:1:AMP006": {"verdict": "false", "why": "package not in this run"},
        },
        "misses": [
            {"package": "pkg-1", "file": "loop.py", "rows": [[5, 9], [50, 60]], "rule": "AMP003", "why": "now found"},
            {"package": "pkg-1", "file": "loop.py", "rows": [100, 120], "rule": "AMP003", "why": "still missed"},
            {"package": "other-2", "file": "y.py", "rows": [1, 9], "rule": "AMP003", "why": "not in run"},
        ],
    }
    reported = [
        verdicts.Reported("pkg-1", "train.py", 10, "AMP006"),
        verdicts.Reported("pkg-1", "train.py", 20, "AMP006"),
        verdicts.Reported("pkg-1", "train.py", 25, "AMP006"),  # nobody has read this one
        verdicts.Reported("pkg-1", "loop.py", 55, "AMP003"),
    ]
    names = {"AMP003": "clip-before-unscale", "AMP006": "scaler-state-not-checkpointed"}
    table = verdicts.rule_table(reported, review, names, packages={"pkg-1"})

    assert table[0].startswith("| rule | findings | true | false alarms | unreviewed |")
    # findings, true, false alarms, unreviewed, gone (true / false), misses still missed, now reported
    assert _row(table, "AMP006 scaler-state-not-checkpointed")[1:] == ["3", "1", "1", "1", "1 / 1", "–", "–"]
    assert _row(table, "AMP003 clip-before-unscale")[1:] == ["1", "–", "–", "1", "–", "1", "1"]
    assert _row(table, "**total**")[1:] == ["4", "1", "1", "2", "1 / 1", "1", "1"]
    assert [r.key for r in verdicts.unreviewed(reported, review)] == [
        "pkg-1/train.py:25:AMP006", "pkg-1/loop.py:55:AMP003"]


def test_table_lists_every_rule_even_without_findings():
    table = verdicts.rule_table([], {}, {"AMP002": "backward-in-autocast"}, packages=set())
    assert _row(table, "AMP002 backward-in-autocast")[1:] == ["0", "–", "–", "–", "–", "–", "–"]


SNAPSHOT_KEY = re.compile(r"^(?P<snapshot>[^/@]+\+[^/@]+@[0-9a-f]{7,40})/(?P<file>.+\.(py|ipynb)):(?P<row>[0-9]+):(?P<code>AMP[0-9]{3})$")


def test_snapshot_verdicts_name_listed_snapshots_and_reviewed_rules():
    import snapshot_review

    review = verdicts.load(BENCH / "snapshot-verdicts.json")
    snapshots = {snapshot_review.package_key(repo, entry["commit"]) for repo, entry in review["snapshots"].items()}
    assert len(review["snapshots"]) >= 15
    for key in review["findings"]:
        match = SNAPSHOT_KEY.match(key)
        assert match, key
        assert match["snapshot"] in snapshots, key
        assert match["code"] in review["rules"], key
    for miss in review["misses"]:
        assert miss["package"] in snapshots and miss["rule"] in review["rules"], miss
        assert miss["why"].strip(), miss


def test_round3_verdicts_name_listed_snapshots():
    import snapshot_review

    review = verdicts.load(BENCH / "round3-verdicts.json")
    snapshots = {snapshot_review.package_key(repo, entry["commit"]) for repo, entry in review["snapshots"].items()}
    assert len(review["snapshots"]) == 38
    assert all(entry["domain"] and isinstance(entry["notes"], list) for entry in review["snapshots"].values())
    for key in review["findings"]:
        match = SNAPSHOT_KEY.match(key)
        assert match, key
        assert match["snapshot"] in snapshots, key
        assert review["findings"][key]["why"].strip(), key
    for miss in review["misses"]:
        assert miss["package"] in snapshots and miss["why"].strip(), miss
