"""Hand review verdicts for a corpus run, and the per-rule table built from them.

A review reads every finding and marks it true or a false alarm, and lists
the misuse it found that amplint did not report (misses). The verdicts live in
a JSON file beside this script, so that after the rules change a re-run shows
at once what moved: a false alarm that is gone was fixed, a true finding that
is gone was lost, a miss that is now reported was closed, and a finding nobody
has read yet is counted as unreviewed.

File shape:

    {
      "findings": {
        "PKG-VER/path/in/package.py:ROW:CODE": {"verdict": "true" | "false", "why": "..."}
      },
      "misses": [
        {"package": "PKG-VER", "file": "path/in/package.py", "rows": [FIRST, LAST],
         "rule": "AMP006", "why": "..."}     (or "rows": [[FIRST, LAST], [FIRST, LAST], ...])
      ]
    }

A miss counts as found when the rule reports anything in that file within
`rows` (the spans of the loop or function the misuse is in, and of the helper
it calls), because a fix to the rule may anchor the finding on any line of it.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

VERDICTS = ("true", "false")


@dataclass(frozen=True)
class Reported:
    package: str  # NAME-VER
    filename: str
    row: int
    code: str

    @property
    def key(self) -> str:
        return f"{self.package}/{self.filename}:{self.row}:{self.code}"


def load(path: Path) -> dict:
    data = json.loads(path.read_text(encoding="utf-8"))
    for key, entry in data.get("findings", {}).items():
        if entry.get("verdict") not in VERDICTS:
            raise ValueError(f"{path}: {key}: verdict must be one of {VERDICTS}, not {entry.get('verdict')!r}")
    return data


def _spans(rows: list) -> list[tuple[int, int]]:
    return [tuple(span) for span in rows] if rows and isinstance(rows[0], list) else [tuple(rows)]


def _miss_found(miss: dict, reported: list[Reported]) -> bool:
    spans = _spans(miss["rows"])
    return any(r.package == miss["package"] and r.filename == miss["file"] and r.code == miss["rule"]
               and any(first <= r.row <= last for first, last in spans) for r in reported)


def rule_table(reported: list[Reported], verdicts: dict, rule_names: dict[str, str],
               packages: set[str]) -> list[str]:
    """One markdown row per rule: findings now, and how they stand against the review.

    Only the verdicts and misses of packages in this run count, so a run on a
    subset of the corpus does not show the rest as fixed or lost.
    """
    findings = {k: v for k, v in verdicts.get("findings", {}).items() if k.split("/", 1)[0] in packages}
    misses = [m for m in verdicts.get("misses", []) if m["package"] in packages]
    now = {r.key: r for r in reported}
    per_rule: dict[str, Counter] = {code: Counter() for code in rule_names}
    for r in reported:
        entry = findings.get(r.key)
        per_rule.setdefault(r.code, Counter())["findings"] += 1
        per_rule[r.code][entry["verdict"] if entry else "unreviewed"] += 1
    for key, entry in findings.items():
        if key not in now:
            code = key.rsplit(":", 1)[1]
            per_rule.setdefault(code, Counter())["gone_" + entry["verdict"]] += 1
    for miss in misses:
        per_rule.setdefault(miss["rule"], Counter())[
            "miss_found" if _miss_found(miss, reported) else "miss_open"] += 1
    header = ("| rule | findings | true | false alarms | unreviewed | reviewed, no longer reported "
              "(true / false) | misses still missed | misses now reported |")
    lines = [header, "|---|---:|---:|---:|---:|---:|---:|---:|"]
    total: Counter = Counter()
    for code in sorted(per_rule):
        c = per_rule[code]
        total.update(c)
        name = f"{code} {rule_names[code]}" if code in rule_names else code
        lines.append(_row(name, c))
    lines.append(_row("**total**", total))
    return lines


def _row(name: str, c: Counter) -> str:
    def cell(n: int) -> str:
        return str(n) if n else "–"
    gone = f"{c['gone_true']} / {c['gone_false']}" if c["gone_true"] or c["gone_false"] else "–"
    return (f"| {name} | {c['findings']} | {cell(c['true'])} | {cell(c['false'])} | "
            f"{cell(c['unreviewed'])} | {gone} | {cell(c['miss_open'])} | {cell(c['miss_found'])} |")


def unreviewed(reported: list[Reported], verdicts: dict) -> list[Reported]:
    findings = verdicts.get("findings", {})
    return [r for r in reported if r.key not in findings]
