"""Where the time of a one-file run goes (the pre-commit case), stage by stage.

Usage: python bench/single_file_profile.py [FILE]   (default: the corpus file with a finding,
transformers' models/nemotron/modeling_nemotron.py). Imports are timed in fresh interpreters,
each after what the run has already imported by then; the work on the file is the median of 5
runs in this process; the last rows are the whole command, start-up included, and the same
command with the garbage collector left as the interpreter sets it.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

DEFAULT = "transformers-5.24.0/transformers/models/nemotron/modeling_nemotron.py"
# What a run whose files all fail the prefilter imports (no click: cli.fastparse reads its arguments).
LIGHT = "from amplint.cli.main import _import_check_modules; _import_check_modules()"
PARSING = "from amplint.parsing_modules import import_parsing_modules; import_parsing_modules()"
# The same imports with every dataclass method compiled from source (no table of compiled code).
TABLE = "import amplint.dataclass_code"
NO_TABLE = "import amplint.dataclass_code as d; d.table_path = lambda phase: None"
# The command's code as a library caller runs it: the collector left as it is (amplint/gc_policy.py).
LIBRARY_MAIN = "import sys; from amplint.cli.main import main; main(sys.argv[1:])"
REPEAT = 5


def _fresh(code: str) -> float:
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def _import_seconds(statement: str, after: str = "pass") -> float:
    """Median time of ``statement`` in fresh interpreters that have already run ``after``."""
    code = f"{after}\nimport time; t = time.perf_counter()\n{statement}\nprint(time.perf_counter() - t)"
    return statistics.median(_fresh(code) for _ in range(REPEAT))


def _process_seconds(args: list[str]) -> float:
    runs = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def _median(function) -> float:
    runs = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        function()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def _catalog_from_source(read_package, bytecode_tables) -> None:
    table_path = bytecode_tables.table_path
    bytecode_tables.table_path = lambda name: None
    try:
        read_package.__wrapped__()
    finally:
        bytecode_tables.table_path = table_path


def main() -> None:
    from corpus import cache_dir  # bench/corpus.py

    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__)
        return
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else cache_dir() / "src" / DEFAULT
    import libcst as cst

    from amplint.engine import lint_text
    from amplint.selection import focus_tokens_for, rules_to_run
    from amplint.amp import FileFacts
    from amplint.focus import focus_source
    from amplint.positions import Positions
    from amplint import bytecode_tables
    from amplint.rules.catalog import _read_package
    from amplint.settings import Settings

    settings = Settings()
    codes = settings.enabled_codes(str(path))
    text = path.read_text(encoding="utf-8")
    rules = rules_to_run(text, settings, codes)
    focused = focus_source(text, focus_tokens_for(codes)) or text
    module = cst.parse_module(focused)
    rule_modules = "; ".join(f"import {rule.__module__}" for rule in rules)

    def run_rules():
        shared = FileFacts(module, Positions(module), str(path), settings)
        return [violation for rule in rules for violation in rule(shared).check()]

    findings = lint_text(text, str(path), settings, edits=False).findings
    rows = [
        ("interpreter start-up", _process_seconds([sys.executable, "-c", "pass"])),
        ("import dataclasses (inspect, re, ...)", _import_seconds(TABLE)),
        ("import the rest of what a clean run needs", _import_seconds(LIGHT, after=TABLE)),
        ("  the same, dataclass code compiled from source", _import_seconds(LIGHT, after=NO_TABLE)),
        ("read the rule catalog from its table", _median(_read_package.__wrapped__)),
        ("  the same, read from the rule sources (ast)", _median(lambda: _catalog_from_source(_read_package, bytecode_tables))),
        ("import libcst, facts, positions, fixes", _import_seconds(PARSING, after=f"{TABLE}; {LIGHT}")),
        ("  the same, dataclass code compiled from source", _import_seconds(PARSING, after=f"{NO_TABLE}; {LIGHT}")),
        (f"import the {len(rules)} of {len(codes)} rules this file can trigger",
         _import_seconds(rule_modules, after=f"{LIGHT}; {PARSING}")),
        ("focus (ast parse, blank definitions)", _median(lambda: focus_source(text, focus_tokens_for(codes)))),
        ("libcst parse of the focused text", _median(lambda: cst.parse_module(focused))),
        ("facts pass", _median(lambda: FileFacts(module, Positions(module), str(path), settings))),
        ("facts pass + the rules", _median(run_rules)),
        ("positions (only when there is a finding)", _median(lambda: Positions(module)._resolved())),
        ("whole lint_text, in process", _median(lambda: lint_text(text, str(path), settings, edits=False))),
        ("whole `amplint check --no-cache FILE`",
         _process_seconds([sys.executable, "-m", "amplint", "check", "--exit-zero", "--no-cache", str(path)])),
        ("  the same, collector left as Python sets it",
         _process_seconds([sys.executable, "-c", LIBRARY_MAIN, "check", "--exit-zero", "--no-cache", str(path)])),
    ]
    kept = sum(1 for line in focused.splitlines() if line.strip())
    print(f"file: {path} ({len(text.splitlines())} lines, {kept} non-blank lines parsed, {len(findings)} finding(s))")
    for name, seconds in rows:
        print(f"{name:48s} {seconds * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
