"""Lint and fix real code end to end: no internal error, every fix compiles, a second fix changes nothing.

Usage:
    python bench/sweep.py [--amplint "CMD"] [--set speed|accuracy|none] [--no-torch] [PATH ...]

Sweeps every ``.py`` file of the installed torch package, of the bench corpus already
unpacked under the cache (bench/corpus.py; nothing is downloaded) and of each PATH:

1. ``amplint check --select ALL --no-prefilter`` on every file;
2. the files with findings are copied, and ``check --fix --unsafe-fixes`` rewrites the copies;
3. each fixed copy must compile with this interpreter and parse with libcst (a file this
   Python rejects must come back unchanged);
4. a second ``--fix`` on the copies must change no byte.

Prints counts and times; exits 1 on any internal error or failed check. Stdlib only, apart
from libcst for the parse check (amplint's own dependency).
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

LINT = ("check", "--select", "ALL", "--no-prefilter", "--no-cache", "--exit-zero")
FIX = (*LINT, "--fix", "--unsafe-fixes", "--quiet")
CHUNK = 400  # files per amplint process: far below any command-line limit


@dataclass
class Tree:
    """Files to sweep, named relative to ``root`` (the copies keep that layout)."""

    label: str
    root: Path
    files: list[Path]


@dataclass
class Report:
    files: int = 0
    findings: collections.Counter = field(default_factory=collections.Counter)
    files_with_findings: int = 0
    files_fixed: int = 0
    skipped: list[str] = field(default_factory=list)  # clear one-line skips (not failures)
    failures: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures


def python_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if p.is_file() and "__pycache__" not in p.parts)


def _chunks(items: list, size: int = CHUNK):
    for start in range(0, len(items), size):
        yield items[start: start + size]


def _run(amplint: list[str], args: tuple[str, ...], files: list[Path], report: Report, stage: str) -> str:
    """stdout of ``amplint ARGS FILES``; internal errors and crashes become failures."""
    proc = subprocess.run([*amplint, *args, "--", *map(str, files)], capture_output=True, text=True, errors="replace")
    for line in proc.stderr.splitlines():
        if "internal error" in line or line.startswith("Traceback"):
            report.failures.append(f"{stage}: {line}")
        elif line.startswith("amplint: error:"):
            report.skipped.append(f"{stage}: {line}")
    if proc.returncode not in (0, 1):
        report.failures.append(f"{stage}: amplint exited {proc.returncode} on {len(files)} files "
                               f"(first {files[0]}): {proc.stderr.strip()[-300:]}")
    return proc.stdout


def _compiles(data: bytes) -> bool:
    try:
        compile(data, "<sweep>", "exec", dont_inherit=True, flags=0x400)  # PyCF_ONLY_AST
    except (SyntaxError, ValueError):
        return False
    except (RecursionError, MemoryError):
        return True  # too deep for this interpreter's own parser: no verdict either way
    return True


def _libcst_parses(data: bytes) -> bool:
    import libcst

    try:
        libcst.parse_module(data)
    except Exception:  # noqa: BLE001 - any failure counts
        return False
    return True


def lint(trees: list[Tree], amplint: list[str], report: Report) -> list[tuple[Tree, Path]]:
    """Stage 1: the files with at least one finding."""
    start = time.perf_counter()
    with_findings: dict[Path, tuple[Tree, Path]] = {}
    for tree in trees:
        report.files += len(tree.files)
        absolute = {str(path.resolve()): path for path in tree.files}
        for chunk in _chunks(tree.files):
            out = _run(amplint, (*LINT, "--output-format", "json"), chunk, report, "lint")
            for finding in json.loads(out or "[]"):
                report.findings[finding["code"]] += 1
                path = absolute.get(str(Path(finding["filename"]).resolve()))
                if path is not None:
                    with_findings[path] = (tree, path)
    report.files_with_findings = len(with_findings)
    report.seconds["lint"] = time.perf_counter() - start
    return list(with_findings.values())


def fix_copies(found: list[tuple[Tree, Path]], work: Path, amplint: list[str], report: Report) -> None:
    """Stages 2-4 on copies under ``work``."""
    copies: list[tuple[Path, Path]] = []  # (original, copy)
    for tree, path in found:
        copy = work / tree.label / path.relative_to(tree.root)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)
        copies.append((path, copy))
    start = time.perf_counter()
    for chunk in _chunks([copy for _, copy in copies]):
        _run(amplint, FIX, chunk, report, "fix")
    report.seconds["fix"] = time.perf_counter() - start
    first: dict[Path, bytes] = {}
    for original, copy in copies:
        before, after = original.read_bytes(), copy.read_bytes()
        first[copy] = after
        if after != before:
            report.files_fixed += 1
        if not _compiles(before):
            if after != before:
                report.failures.append(f"fix: {original}: rewritten although this Python rejects it")
        elif not _compiles(after):
            report.failures.append(f"fix: {original}: the fixed file does not compile")
        elif after != before and not _libcst_parses(after):
            report.failures.append(f"fix: {original}: libcst cannot parse the fixed file")
    start = time.perf_counter()
    for chunk in _chunks([copy for _, copy in copies]):
        _run(amplint, FIX, chunk, report, "second fix")
    report.seconds["second fix"] = time.perf_counter() - start
    for original, copy in copies:
        if copy.read_bytes() != first[copy]:
            report.failures.append(f"second fix: {original}: changed the file again (fixes do not converge)")


def sweep(trees: list[Tree], amplint: list[str], work: Path) -> Report:
    report = Report()
    found = lint(trees, amplint, report)
    fix_copies(found, work, amplint, report)
    return report


def default_trees(corpus_set: str, torch: bool) -> list[Tree]:
    trees = []
    if torch:
        spec = importlib.util.find_spec("torch")
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit("torch is not installed (use --no-torch)")
        root = Path(list(spec.submodule_search_locations)[0])
        trees.append(Tree("torch", root.parent, python_files(root)))
    if corpus_set != "none":
        from corpus import corpus_dirs

        for directory in corpus_dirs(corpus_set):
            if directory.is_dir():
                trees.append(Tree(directory.name, directory, python_files(directory)))
            else:
                print(f"sweep: {directory} is not unpacked (python bench/corpus.py --set {corpus_set}); skipped",
                      file=sys.stderr)
    return trees


def print_report(report: Report, trees: list[Tree], total: float) -> None:
    for tree in trees:
        print(f"{tree.label}: {len(tree.files)} files")
    print(f"files linted: {report.files}; findings: {sum(report.findings.values())} "
          f"({', '.join(f'{code} {n}' for code, n in sorted(report.findings.items())) or 'none'})")
    print(f"files with findings: {report.files_with_findings}; changed by --fix --unsafe-fixes: {report.files_fixed}")
    print("seconds: " + ", ".join(f"{stage} {s:.1f}" for stage, s in report.seconds.items()) + f", total {total:.1f}")
    for line in report.skipped:
        print(f"skipped: {line}")
    for line in report.failures:
        print(f"FAILED: {line}")
    print("OK: no internal error; every fix compiles and converges" if report.ok else f"{len(report.failures)} failures")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="more directories to sweep")
    parser.add_argument("--amplint", default=f"{shlex.quote(sys.executable)} -m amplint", help="the amplint command")
    parser.add_argument("--set", default="speed", choices=("speed", "accuracy", "all", "none"), help="bench corpus set")
    parser.add_argument("--no-torch", action="store_true", help="leave out the installed torch package")
    args = parser.parse_args(argv)
    trees = default_trees(args.set, not args.no_torch)
    trees += [Tree(path.resolve().name, path.resolve(), python_files(path.resolve())) for path in args.paths]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="amplint-sweep-") as work:
        report = sweep(trees, shlex.split(args.amplint), Path(work))
    print_report(report, trees, time.perf_counter() - start)
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
