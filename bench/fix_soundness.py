"""Apply amplint's safe fixes to a copy of real code and check what they wrote.

For each code base of the review sets (rounds 1 and 2 unpacked under `<cache>/src/`, round 3's
GitHub snapshots under `<cache>/snapshots/` or `$AMPLINT_SNAPSHOTS`, or the directories given), a copy of the tree gets
`amplint check --select ALL --fix` on every `.py` file with a finding, as a user would run it, and
each file the fixes changed must:

- compile (`compile()`: the fixed text is Python);
- converge: a second `--fix` changes nothing;
- hold no finding of a rule the original file did not have (a fix that makes another rule fire
  has changed something that rule cares about).

The tree is copied whole (without `.git` and large data files) so that the project pass sees the
same modules around each file; the originals are never written. Prints one line per code base
and the totals; every failure is listed. Stdlib only.

Usage:
    python bench/fix_soundness.py                     # both review sets
    python bench/fix_soundness.py DIR [DIR ...]       # these code bases

Exit status: 0 when every fixed file passes, 1 otherwise (or when amplint fails on a code base).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # sibling script, not a package

# Round 3's GitHub snapshots, extracted as ``OWNER+NAME`` (bench/README.md); another folder with
# ``AMPLINT_SNAPSHOTS``.
REVIEW3 = Path(os.environ.get("AMPLINT_SNAPSHOTS") or corpus.cache_dir() / "snapshots")
LARGE = 2_000_000  # bytes: data files, checkpoints, notebooks with outputs; no Python source is this big


def review_roots() -> list[Path]:
    roots = sorted(p for p in (corpus.cache_dir() / "src").glob("*") if p.is_dir())
    return roots + sorted(p for p in REVIEW3.glob("*") if p.is_dir())


def amplint(cwd: Path, *args: str) -> list[dict]:
    command = [sys.executable, "-m", "amplint", "check", "--select", "ALL", "--output-format", "json",
               "--no-cache", "--exit-zero", *args]
    result = subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=3600)
    if result.returncode != 0:
        raise RuntimeError(f"amplint exited {result.returncode} in {cwd}: {result.stderr[-1000:]}")
    return json.loads(result.stdout or "[]")


def relative(finding: dict, root: Path) -> str:
    path = Path(finding["filename"])
    return (path if not path.is_absolute() else path.resolve().relative_to(root.resolve())).as_posix()


def codes_by_file(findings: list[dict], root: Path) -> dict[str, Counter]:
    out: dict[str, Counter] = {}
    for finding in findings:
        out.setdefault(relative(finding, root), Counter())[finding["code"]] += 1
    return out


def copy_tree(source: Path, dest: Path) -> None:
    def ignore(folder: str, names: list[str]) -> set[str]:
        return {n for n in names if n == ".git" or (os.path.isfile(os.path.join(folder, n))
                                                    and os.path.getsize(os.path.join(folder, n)) > LARGE)}

    shutil.copytree(source, dest, ignore=ignore, symlinks=True)


def check_code_base(root: Path, tmp: Path) -> dict:
    """Fix a copy of ``root``; what was fixed and what went wrong."""
    report = {"name": root.name, "files": 0, "safe": 0, "changed": 0, "fixes": 0, "problems": []}
    found = codes_by_file(amplint(root, "."), root)
    files = sorted(name for name in found if name.endswith(".py"))
    report["files"] = len(files)
    if not files:
        return report
    copy = tmp / root.name
    copy_tree(root, copy)
    before_texts = {name: (copy / name).read_text(encoding="utf-8") for name in files}
    before_findings = amplint(copy, *files)
    before = codes_by_file(before_findings, copy)
    report["safe"] = len({relative(f, copy) for f in before_findings if (f.get("fix") or {}).get("applicability") == "safe"})
    after = codes_by_file(amplint(copy, "--fix", *files), copy)
    fixed = {name: (copy / name).read_text(encoding="utf-8") for name in files}
    amplint(copy, "--fix", *files)
    changed = [name for name in files if fixed[name] != before_texts[name]]
    report["changed"] = len(changed)
    report["fixes"] = sum(
        sum(before.get(name, Counter()).values()) - sum(after.get(name, Counter()).values()) for name in changed
    )
    for name in changed:
        try:
            compile(fixed[name], name, "exec")
        except SyntaxError as error:
            report["problems"].append(f"{root.name}/{name}: does not compile after --fix: {error}")
        if (copy / name).read_text(encoding="utf-8") != fixed[name]:
            report["problems"].append(f"{root.name}/{name}: a second --fix changed it again")
        new = sorted(set(after.get(name, Counter())) - set(before.get(name, Counter())))
        if new:
            report["problems"].append(f"{root.name}/{name}: new finding(s) after --fix: {', '.join(new)}")
    shutil.rmtree(copy)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="*", type=Path, help="code bases (default: the review sets)")
    args = parser.parse_args(argv)
    roots = args.roots or review_roots()
    totals = Counter()
    problems: list[str] = []
    print(f"{'code base':<44} {'files':>6} {'safe':>5} {'fixed':>6} {'fixes':>6} {'problems':>8}")
    with tempfile.TemporaryDirectory(prefix="amplint-fix-soundness-") as tmp:
        for root in roots:
            try:
                report = check_code_base(root, Path(tmp))
            except (RuntimeError, OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
                problems.append(f"{root.name}: {error}")
                print(f"{root.name:<44} error: {error}")
                continue
            problems += report["problems"]
            totals.update({k: report[k] for k in ("files", "safe", "changed", "fixes")}, code_bases=1)
            print(f"{report['name']:<44} {report['files']:>6} {report['safe']:>5} {report['changed']:>6} "
                  f"{report['fixes']:>6} {len(report['problems']):>8}")
    print(
        f"\n{totals['code_bases']} code bases: {totals['files']} files with findings, {totals['safe']} with a safe fix, "
        f"{totals['changed']} changed by --fix ({totals['fixes']} findings fixed); {len(problems)} problem(s)"
    )
    for problem in problems:
        print(f"  {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
