"""The review of GitHub snapshots: training code that no package archive ships (example scripts,
recipes, trainers), counted against bench/snapshot-verdicts.json the way realworld.py counts the
pinned corpus against review-verdicts.json.

The snapshots are not downloadable from a package registry, so this script does not fetch them:
extract each listed commit of each repository into DIR/OWNER+REPO (for example with
``git archive <commit> | tar -x -C DIR/huggingface+peft``), then run

    python bench/snapshot_review.py DIR [--select AMP019,AMP020,...] [--verdicts FILE] [--only OWNER/REPO,...]

It prints, per rule, the findings now and how they stand against the verdicts, and each finding
no verdict covers. A snapshot folder that is missing is named and left out of the count.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import verdicts

HERE = Path(__file__).resolve().parent
VERDICTS = HERE / "snapshot-verdicts.json"


def folder_name(repository: str) -> str:
    return repository.replace("/", "+")


def package_key(repository: str, commit: str) -> str:
    """What the verdict keys call a snapshot: ``huggingface/peft@5d602fdbf`` (no ``/`` inside, so
    a key still splits into snapshot and path at its first ``/``)."""
    return f"{folder_name(repository)}@{commit}"


def lint(root: Path, select: str) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "amplint", "check", "--no-cache", "--exit-zero", "--output-format", "json", "--select", select, "."],
        cwd=root, capture_output=True, text=True, check=False,
    )
    return json.loads(proc.stdout) if proc.stdout.strip() else []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="where the snapshots are extracted, one OWNER+REPO folder each")
    parser.add_argument("--select", default=",".join(f"AMP0{n}" for n in range(19, 28)),
                        help="the rules to count (default: the framework rules, AMP019-AMP029, which the verdicts cover)")
    parser.add_argument("--verdicts", type=Path, default=VERDICTS)
    parser.add_argument("--only", default="",
                        help="comma-separated OWNER/REPO names: lint and count only these snapshots")
    args = parser.parse_args(argv)
    review = verdicts.load(args.verdicts)
    found: list[verdicts.Reported] = []
    packages: set[str] = set()
    counted = None if args.select == "ALL" else set(args.select.split(","))
    only = {name for name in args.only.split(",") if name}
    for repository, snapshot in review["snapshots"].items():
        if only and repository not in only:
            continue
        root = args.folder / folder_name(repository)
        if not root.is_dir():
            print(f"missing: {root} ({repository} at {snapshot['commit']})")
            continue
        key = package_key(repository, snapshot["commit"])
        packages.add(key)
        for finding in lint(root, args.select):
            if counted is not None and finding["code"] not in counted:
                continue  # AMP000: a file that does not parse is reported whatever is selected
            name = Path(finding["filename"])
            relative = name.relative_to(root) if name.is_absolute() else name
            found.append(verdicts.Reported(key, relative.as_posix(), finding["location"]["row"], finding["code"]))
    names = {}
    print("\n".join(verdicts.rule_table(found, review, names, packages)))
    for reported in verdicts.unreviewed(found, review):
        print(f"unreviewed: {reported.key}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
