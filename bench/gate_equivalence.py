"""The rule gates asked of the cut logical lines against the gates asked of the whole tree.

For every Python file of the given folders that the prefilter keeps, the codes the gates leave
from the logical lines cut out of the text (``codes_that_may_report_from_text``) must hold every
code they leave from the file's whole ``ast`` (``codes_that_may_report``): a code dropped by the
cut lines alone and kept by the whole tree would be a finding lost. Reports how often the two
agree exactly and how often the cut answers at all.

Usage:
    python bench/gate_equivalence.py DIR [DIR ...]            # default rules
    python bench/gate_equivalence.py --select ALL --gated DIR [DIR ...]   # every gate the cut serves

Exit status: 0 when no file loses a code, 1 otherwise.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import time
import warnings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--select", default=None, help="rule selector (default: the default rules)")
    parser.add_argument("--gated", action="store_true",
                        help="ask only the rules whose gates the cut lines serve (the cut answers nothing for a file "
                             "where another rule runs: with --select ALL, every file)")
    args = parser.parse_args(argv)

    from amplint.rule_gates import GATES, codes_that_may_report, codes_that_may_report_from_text
    from amplint.selection import codes_to_run
    from amplint.settings import Settings
    from amplint.sourcefile import SourceError, decode_source

    settings = Settings(select=(args.select,)) if args.select else Settings()
    files = kept = answered = same = 0
    lost: list[str] = []
    cut_time = whole_time = 0.0
    for folder in args.folders:
        for directory, _, names in os.walk(folder):
            for name in sorted(names):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(directory, name)
                files += 1
                try:
                    with open(path, "rb") as handle:
                        text = decode_source(handle.read(), path).text
                except (OSError, SourceError):
                    continue
                codes = codes_to_run(text, settings, settings.enabled_codes(path))
                if args.gated:
                    codes = frozenset(code for code in codes if code in GATES)
                if not codes:
                    continue
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        started = time.perf_counter()
                        tree = ast.parse(text)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    continue
                kept += 1
                whole = codes_that_may_report(codes, tree, text=text)
                whole_time += time.perf_counter() - started
                started = time.perf_counter()
                cut = codes_that_may_report_from_text(codes, text)
                cut_time += time.perf_counter() - started
                if cut is None:
                    continue
                answered += 1
                same += cut == whole
                if not whole <= cut:
                    lost.append(f"{path}: {sorted(whole - cut)} kept by the whole tree, dropped by the cut lines")
    for line in lost:
        print(line)
    print(f"{files} files, {kept} kept by the prefilter and parsed; the cut lines answered for {answered} "
          f"({same} exactly as the whole tree), lost a code on {len(lost)}; "
          f"gates on the whole tree {whole_time:.2f} s (parse included), on the cut lines {cut_time:.2f} s")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
