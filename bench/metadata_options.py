"""What each way of getting rule metadata without importing libcst would cost.

Usage: python bench/metadata_options.py [--reps N]. Each row is the median of N fresh
interpreters (default 7), timed after the imports the row does not count; it prints a
Markdown table for docs/performance.md.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

_START = "import time; t = time.perf_counter()\n"
_END = "\nprint(time.perf_counter() - t)"

ROWS = (
    ("read every rule file with `ast.parse`",
     "import ast, os, amplint.rules.catalog as c",
     "for n in c.rule_module_names():\n"
     "    ast.parse(open(os.path.join(c.PACKAGE_DIR, n + '.py'), encoding='utf-8').read())"),
    ("**read each rule class up to its last metadata line (the catalog)**",
     "import amplint.rules.catalog as c",
     "c._read_package()"),
    ("import the rule modules, libcst and the facts already imported (what a lazy proxy still pays)",
     "import importlib, libcst, amplint.amp, amplint.fix, amplint.rules.catalog as c",
     "for n in c.rule_module_names(): importlib.import_module('amplint.rules.' + n)"),
    ("for scale: import libcst and the facts layer",
     "import click",
     "import libcst, amplint.amp"),
)


def seconds(setup: str, timed: str) -> float:
    code = f"{setup}\n{_START}{timed}{_END}"
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    print("| way | median ms |")
    print("|---|---:|")
    for label, setup, timed in ROWS:
        runs = [seconds(setup, timed) for _ in range(args.reps)]
        print(f"| {label} | {statistics.median(runs) * 1000:.1f} |")


if __name__ == "__main__":
    main()
