"""The one-file rows of bench/speed.py: the pre-commit case, amplint side by side with ruff and TorchFix.

pre-commit and editors run a linter on one or a few changed files, so what counts there is
the cost of one process on one file, start-up included. Three real files of the speed corpus:

- clean: no AMP text at all, so amplint's prefilter skips it (most changed files are like this);
- findings: the corpus file with a finding under the default rules;
- parsed: a training loop that passes the prefilter and is parsed, without a finding.

Each is linted by amplint, by ``ruff check --select ALL`` and by ``torchfix --select ALL``,
round-robin within the same run.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

# (key, corpus package, path inside it, what the file is)
FILES = (
    ("clean", "ultralytics", "ultralytics/utils/plotting.py", "no AMP text: skipped by the prefilter"),
    ("findings", "transformers", "transformers/models/nemotron/modeling_nemotron.py",
     "one AMP014 finding (the speed corpus's only file with a default finding)"),
    ("parsed", "ultralytics", "ultralytics/engine/trainer.py", "a training loop: parsed, no finding"),
)
TOOLS = ("amplint", "ruff", "torchfix")
TARGETS_S = {"clean": 0.100, "findings": 0.300}
START_MARKER, END_MARKER = "<!-- bench:one-file:start -->", "<!-- bench:one-file:end -->"


@dataclass(frozen=True)
class OneFile:
    key: str
    path: str  # absolute
    shown: str  # path inside the corpus
    what: str
    lines: int


def tool_key(tool: str, file_key: str) -> str:
    return f"{tool}-{file_key}"


def commands(amplint: list[str], bin_dir: str, path: str) -> dict[str, list[str]]:
    """The command of each tool on one file; all print their findings, none writes a cache."""
    return {
        "amplint": [*amplint, "check", "--exit-zero", "--no-cache", path],
        "ruff": [f"{bin_dir}/ruff", "check", "--select", "ALL", "--no-cache", "--exit-zero", path],
        "torchfix": [f"{bin_dir}/torchfix", "--select", "ALL", path],
    }


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f}"


def table(files: list[OneFile], by_key: dict) -> list[str]:
    """One row per file and tool: median and min-max in ms, peak RSS, ratio to ruff on that file."""
    lines = ["| file | tool | median ms | min–max ms | peak RSS MB | ratio to ruff |",
             "|---|---|---:|---:|---:|---:|"]
    for file in files:
        ruff = by_key.get(tool_key("ruff", file.key))
        for tool in TOOLS:
            row = by_key.get(tool_key(tool, file.key))
            if row is None or not row.times:
                continue
            median = statistics.median(row.times)
            ratio = f"{median / statistics.median(ruff.times):.1f}×" if ruff is not None and ruff.times else "n/a"
            failed = " **(failed)**" if row.failures else ""
            rss = max(row.max_rss_kb, default=0) / 1024 or max(row.tree_rss_kb, default=0) / 1024
            lines.append(f"| {file.key} | {tool}{failed} | {_ms(median)} | {_ms(min(row.times))}–{_ms(max(row.times))} "
                         f"| {rss:.0f} | {ratio} |")
    return lines


def targets(by_key: dict) -> list[tuple[str, str]]:
    out = []
    for file_key, limit in TARGETS_S.items():
        row = by_key.get(tool_key("amplint", file_key))
        desc = f"amplint, one {file_key} file < {limit * 1000:.0f} ms (median)"
        if row is None or not row.times or row.failures:
            out.append(("SKIP", desc))
        else:
            out.append(("PASS" if statistics.median(row.times) < limit else "FAIL", desc))
    return out


def file_notes(files: list[OneFile]) -> list[str]:
    return [f"- {file.key}: `{file.shown}` ({file.lines:,} lines), {file.what}" for file in files]
