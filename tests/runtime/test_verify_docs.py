"""docs/verify.md documents every verify option, every verdict and exit code, and the JSON
evaluation keys, as built."""

from __future__ import annotations

import re
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "verify.md").read_text(encoding="utf-8")


def test_every_verify_option_is_in_the_option_table():
    from amplint.runtime.command import verify_command

    table = [line.split("|")[1] for line in DOC.split("## Options", 1)[1].split("\n## ", 1)[0].splitlines()
             if line.startswith("| `")]
    documented = {flag for cell in table for flag in re.findall(r"`(-[-\w]+)", cell)}
    missing = [p.opts[0] for p in verify_command.params if isinstance(p, click.Option)
               and not any(o in documented for o in (*p.opts, *p.secondary_opts) if o != "--help")]
    assert missing == []


def test_every_exit_code_and_verdict_word_is_in_the_verdict_table():
    from amplint.runtime.report import VERDICT_WORDS
    from amplint.runtime.verdict import VERDICTS

    rows = {}
    for line in DOC.splitlines():
        m = re.match(r"\| \*\*(\d)\*\* \| `([A-Z ]+)` \| `([a-z ]+)` \|", line)
        if m:
            rows[int(m.group(1))] = (m.group(2), m.group(3))
    assert rows == {code: (VERDICT_WORDS[code], VERDICTS[code]) for code in VERDICTS}


def test_the_json_evaluation_keys_are_documented():
    from test_verify_decisions import EVALUATION_KEYS

    row = next(line for line in DOC.splitlines() if line.startswith("| `evaluation` |"))
    assert EVALUATION_KEYS <= set(re.findall(r"`(\w+)`", row))
