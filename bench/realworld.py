"""Run amplint over the real-world accuracy corpus and lay every finding out for review.

Precision on real code matters more than rule count, so every finding is
printed as `path:row:col: CODE message`, grouped by rule, for a human to mark
true or false. The same report is written to
`<cache>/realworld-report.json` and `<cache>/realworld-report.md`.

Each finding is also looked up in the hand review (bench/review-verdicts.json,
see verdicts.py), and the report opens with one row per rule: findings, true,
false alarms, unreviewed, reviewed findings no longer reported, and the misses
of the review still missed or now reported.

Usage:
    python bench/realworld.py                      # review report (round 1 set)
    python bench/realworld.py --set round2         # the round 2 packages
    python bench/realworld.py --compare-prefilter  # prefilter must not change findings

Exit status: 0 ok; 1 amplint crashed or reported an internal error on some
package (or, with --compare-prefilter, the findings differ).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # sibling script, not a package
import verdicts  # sibling script

# amplint exits 2 on usage or internal error even under --exit-zero.
INTERNAL_ERROR_EXIT = 2
MAX_DIFF_LINES = 50
CRASH_MARKERS = ("Traceback (most recent call last)", "internal error", "InternalError")
DEFAULT_VERDICTS = Path(__file__).resolve().parent / "review-verdicts.json"


@dataclass
class PackageRun:
    name: str
    version: str
    root: Path
    py_files: int
    returncode: int = 0
    seconds: float = 0.0
    findings: list[dict] = field(default_factory=list)
    stderr_lines: list[str] = field(default_factory=list)
    json_error: str | None = None

    @property
    def crashed(self) -> bool:
        return (
            self.returncode == INTERNAL_ERROR_EXIT
            or self.returncode < 0  # killed by a signal
            or self.json_error is not None
            or any(m in line for line in self.stderr_lines for m in CRASH_MARKERS)
        )


def amplint_command(base: str, root: Path, select: str, extra: list[str]) -> list[str]:
    return [*shlex.split(base), "check", "--select", select, "--output-format", "json",
            "--no-cache", "--exit-zero", *extra, str(root)]


def relative_finding(finding: dict, root: Path) -> dict:
    # Keep the report readable and stable across machines: paths relative to
    # the unpacked package, not to wherever the cache happens to live.
    filename = Path(finding.get("filename", ""))
    if not filename.is_absolute():
        filename = root / filename
    out = dict(finding)
    out["filename"] = os.path.relpath(filename, root)
    return out


def run_package(base: str, name: str, version: str, select: str, extra: list[str],
                timeout: float) -> PackageRun:
    root = corpus.prepare(name, version)
    run = PackageRun(name, version, root, corpus.count_py(root))
    cmd = amplint_command(base, root, select, extra)
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, check=False, cwd=root, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        run.returncode, run.json_error = -9, f"timed out after {timeout:.0f}s"
        return run
    run.seconds = time.perf_counter() - start
    run.returncode = proc.returncode
    run.stderr_lines = [line for line in proc.stderr.splitlines() if line.strip()]
    try:
        raw = json.loads(proc.stdout) if proc.stdout.strip() else []
        run.findings = [relative_finding(f, root) for f in raw]
    except (json.JSONDecodeError, TypeError, AttributeError) as err:
        run.json_error = f"unparseable JSON output: {err}: {proc.stdout[:200]!r}"
    return run


def sort_key(finding: dict) -> tuple:
    loc = finding.get("location") or {}
    return (finding.get("filename", ""), loc.get("row", 0), loc.get("column", 0),
            finding.get("code", ""))


def finding_line(package: str, finding: dict) -> str:
    loc = finding.get("location") or {}
    return (f"{package}/{finding['filename']}:{loc.get('row')}:{loc.get('column')}: "
            f"{finding.get('code')} {finding.get('message')}")


def by_rule(runs: list[PackageRun]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = defaultdict(list)
    for run in runs:
        for finding in sorted(run.findings, key=sort_key):
            grouped[finding.get("code", "?")].append(finding_line(f"{run.name}-{run.version}", finding))
    return dict(sorted(grouped.items()))


def counts_table(runs: list[PackageRun]) -> list[str]:
    codes = sorted({f.get("code", "?") for run in runs for f in run.findings})
    header = ["package", ".py files", "seconds", *codes, "total"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for run in runs:
        per_code = Counter(f.get("code", "?") for f in run.findings)
        status = " (CRASH)" if run.crashed else ""
        cells = [f"{run.name}=={run.version}{status}", str(run.py_files), f"{run.seconds:.1f}",
                 *(str(per_code.get(c, 0)) for c in codes), str(len(run.findings))]
        lines.append("| " + " | ".join(cells) + " |")
    totals = Counter(f.get("code", "?") for run in runs for f in run.findings)
    cells = ["**total**", str(sum(r.py_files for r in runs)), f"{sum(r.seconds for r in runs):.1f}",
             *(str(totals[c]) for c in codes), str(sum(totals.values()))]
    lines.append("| " + " | ".join(cells) + " |")
    return lines


def crash_section(runs: list[PackageRun]) -> list[str]:
    lines: list[str] = []
    for run in runs:
        if not (run.crashed or run.stderr_lines):
            continue
        label = "CRASH" if run.crashed else "stderr"
        lines.append(f"### {label}: {run.name}=={run.version} (exit {run.returncode})")
        if run.json_error:
            lines.append(f"- {run.json_error}")
        lines.extend(f"    {line}" for line in run.stderr_lines[:200])
        if len(run.stderr_lines) > 200:
            lines.append(f"    ... {len(run.stderr_lines) - 200} more stderr lines")
    return lines


def rule_names(base: str) -> dict[str, str]:
    proc = subprocess.run([*shlex.split(base), "rules", "--output-format", "json"],
                          check=False, capture_output=True, text=True)
    try:
        return {rule["code"]: rule["name"] for rule in json.loads(proc.stdout)}
    except (json.JSONDecodeError, TypeError, KeyError):
        return {}  # the table still works, with codes only


def reported(runs: list[PackageRun]) -> list[verdicts.Reported]:
    return [verdicts.Reported(f"{run.name}-{run.version}", f["filename"],
                              (f.get("location") or {}).get("row", 0), f.get("code", "?"))
            for run in runs for f in run.findings]


def verdict_section(runs: list[PackageRun], review: dict, names: dict[str, str]) -> list[str]:
    found = reported(runs)
    packages = {f"{run.name}-{run.version}" for run in runs}
    out = ["## Per rule, against the hand review", "", *verdicts.rule_table(found, review, names, packages), ""]
    fresh = verdicts.unreviewed(found, review)
    out += [f"Unreviewed findings: {len(fresh)}", ""]
    if fresh:
        out += ["```", *(r.key for r in sorted(fresh, key=lambda r: r.key)), "```", ""]
    return out


def markdown_report(runs: list[PackageRun], command: str, review: dict, names: dict[str, str]) -> str:
    out = ["# amplint real-world review", "", f"Command per package: `{command}`", "",
           *verdict_section(runs, review, names),
           "## Findings per rule per package", "", *counts_table(runs), ""]
    problems = crash_section(runs)
    out += ["## Crashes and stderr", "", *(problems or ["none"]), ""]
    out += ["## Every finding, by rule", ""]
    for code, lines in by_rule(runs).items():
        out += [f"### {code} ({len(lines)})", "", "```", *lines, "```", ""]
    return "\n".join(out)


def json_report(runs: list[PackageRun], command: str) -> dict:
    return {
        "command": command,
        "packages": [
            {"name": r.name, "version": r.version, "root": str(r.root), "py_files": r.py_files,
             "seconds": round(r.seconds, 3), "returncode": r.returncode, "crashed": r.crashed,
             "json_error": r.json_error, "stderr": r.stderr_lines,
             "findings": sorted(r.findings, key=sort_key)}
            for r in runs
        ],
    }


def runs_from_json(path: Path) -> tuple[list[PackageRun], str]:
    """The runs of an earlier report, to re-count them against edited verdicts without re-linting."""
    data = json.loads(path.read_text(encoding="utf-8"))
    runs = []
    for pkg in data["packages"]:
        run = PackageRun(pkg["name"], pkg["version"], Path(pkg["root"]), pkg["py_files"],
                         returncode=pkg["returncode"], seconds=pkg["seconds"], findings=pkg["findings"],
                         stderr_lines=pkg["stderr"], json_error=pkg["json_error"])
        runs.append(run)
    return runs, data["command"]


def review(args: argparse.Namespace) -> int:
    if args.from_json:
        runs, command = runs_from_json(args.from_json)
    else:
        runs = []
        for name, version in corpus.SETS[args.set_name]:
            print(f"... {name}=={version}", file=sys.stderr, flush=True)
            runs.append(run_package(args.amplint, name, version, args.select, args.extra, args.timeout))
        command = shlex.join(amplint_command(args.amplint, Path("<package-dir>"), args.select, args.extra))
    review_data = verdicts.load(args.verdicts) if args.verdicts.is_file() else {}
    report = markdown_report(runs, command, review_data, rule_names(args.amplint))
    print(report)
    cache = corpus.cache_dir()
    (cache / "realworld-report.md").write_text(report + "\n", encoding="utf-8")
    (cache / "realworld-report.json").write_text(
        json.dumps(json_report(runs, command), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {cache / 'realworld-report.md'} and {cache / 'realworld-report.json'}", file=sys.stderr)
    crashed = [r.name for r in runs if r.crashed]
    if crashed:
        print(f"FAIL: amplint crashed or reported an internal error on: {', '.join(crashed)}",
              file=sys.stderr)
    return 1 if crashed else 0


def finding_identity(finding: dict) -> tuple:
    loc, end = finding.get("location") or {}, finding.get("end_location") or {}
    return (finding.get("filename"), loc.get("row"), loc.get("column"), end.get("row"),
            end.get("column"), finding.get("code"), finding.get("message"))


def compare_prefilter(args: argparse.Namespace) -> int:
    """The prefilter is an optimisation only: it must never change what is found."""
    failed = False
    for name, version in corpus.SETS[args.set_name]:
        with_pf = run_package(args.amplint, name, version, args.select, args.extra, args.timeout)
        without_pf = run_package(args.amplint, name, version, args.select,
                                 [*args.extra, "--no-prefilter"], args.timeout)
        a = Counter(map(finding_identity, with_pf.findings))
        b = Counter(map(finding_identity, without_pf.findings))
        crashed = with_pf.crashed or without_pf.crashed
        ok = a == b and not crashed
        print(f"{'ok  ' if ok else 'FAIL'} {name}=={version}: {sum(a.values())} findings with prefilter "
              f"({with_pf.seconds:.1f}s), {sum(b.values())} without ({without_pf.seconds:.1f}s)"
              + (" CRASH" if crashed else ""))
        for label, diff in (("only without prefilter", b - a), ("only with prefilter", a - b)):
            idents = sorted(diff.elements(), key=str)
            for ident in idents[:MAX_DIFF_LINES]:
                print(f"    {label}: {ident}")
            if len(idents) > MAX_DIFF_LINES:
                print(f"    {label}: ... {len(idents) - MAX_DIFF_LINES} more")
        for line in crash_section([with_pf, without_pf]):
            print(line)
        failed |= not ok
    return 1 if failed else 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--amplint", default=f"{shlex.quote(sys.executable)} -m amplint",
                        help="command that runs amplint (default: this interpreter's -m amplint)")
    parser.add_argument("--set", choices=sorted(corpus.SETS), default="accuracy", dest="set_name")
    parser.add_argument("--select", default="ALL")
    parser.add_argument("--verdicts", type=Path, default=DEFAULT_VERDICTS,
                        help="hand-review verdicts to count findings against (default: %(default)s)")
    parser.add_argument("--from-json", type=Path, metavar="REPORT",
                        help="re-count a saved realworld-report.json against the verdicts instead of linting")
    parser.add_argument("--compare-prefilter", action="store_true",
                        help="run with and without --no-prefilter; fail if findings differ")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per package run")
    parser.add_argument("extra", nargs="*", help="extra amplint check arguments (after --)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return compare_prefilter(args) if args.compare_prefilter else review(args)


if __name__ == "__main__":
    sys.exit(main())
