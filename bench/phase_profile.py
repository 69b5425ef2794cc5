"""Where a whole-directory run's time goes, phase by phase, in one process.

    python bench/phase_profile.py [DIR ...]     # default: transformers of the speed corpus

Mirrors what ``amplint check --no-cache -j 1`` does to each file (discovery, reading, the
substring prefilter, decoding, Python's ``ast`` and the syntax checks, the rule gates, libcst's
import, the focused parse, facts and rules), timing each phase over all files, and lists the
files that reach libcst with what each cost. The phases are the engine's own functions called in
order, so the figures add up to about a ``-j 1`` run less its interpreter start-up, imports and
reporting; the last line times the real ``lint_text`` of the parsed files for comparison.
Times are the process's CPU time (less disturbed by other load than wall time); the load
average is printed with them.
"""

from __future__ import annotations

import os
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # sibling script, not a package


def main(argv: list[str]) -> int:
    dirs = argv or [str(corpus.prepare("transformers", corpus.SPEED["transformers"]))]
    print(f"1-min load average before: {os.getloadavg()[0]:.2f}")
    spent: dict[str, float] = defaultdict(float)

    def timed(phase: str, function, *args, **kwargs):
        began = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent[phase] += time.process_time() - began

    from amplint.gc_policy import start_short_command

    start_short_command()  # the collector as the command runs it (amplint.gc_policy)
    began = time.process_time()
    from amplint.discovery import discover
    from amplint.selection import codes_to_run, focus_tokens_for, may_have_findings, same_answer, same_tokens
    from amplint.settings import Settings
    from amplint.sourcefile import decode_source, read_bytes
    spent["import the command's modules"] = time.process_time() - began

    settings = Settings()
    found = timed("discovery (walk, excludes, gitignore)", discover, dirs)
    files = found.files
    survivors = []
    for path in files:
        data = timed("read bytes", read_bytes, path)
        name = str(path)
        if not timed("substring prefilter", may_have_findings, data, settings, name):
            continue
        source = timed("decode", decode_source, data, name)
        text = source.text
        if source.encoding == "utf-8":  # as jobs.process_file: what the bytes showed stands for the text
            (same_answer if data.isascii() else same_tokens)(data, text)
        run = timed("codes_to_run (per-rule substrings)", codes_to_run, text, settings, settings.enabled_codes(name))
        survivors.append((name, text, run))

    from amplint.rule_gates import codes_that_may_report
    from amplint.syntaxcheck import expression_depth, python_view

    parsed = []
    for name, text, run in survivors:
        view = timed("ast parse (syntax verdict)", python_view, text, name)
        if view.tree is None:
            continue
        codes = settings.enabled_codes(name)
        may = timed("rule gates (ast walk)", codes_that_may_report, run, view.tree, False, text)
        if may:
            timed("expression depth (files left a rule)", expression_depth, view.tree, text)
            parsed.append((name, text, view.tree, codes, may))

    from amplint.parsing_modules import import_parsing_modules
    timed("import libcst, facts (once)", import_parsing_modules)
    import libcst as cst

    from amplint.amp import FileFacts
    from amplint.focus import focus_source
    from amplint.positions import Positions
    from amplint.selection import rules_for

    per_file = []
    for name, text, tree, codes, may in parsed:
        rules = timed("import rule modules", rules_for, may)
        began = time.process_time()
        tokens = focus_tokens_for(codes)
        focused = timed("focus (blank definitions)", focus_source, text, tokens, tree) or text
        module = timed("libcst parse of the focused text", cst.parse_module, focused)
        facts = timed("facts", FileFacts, module, Positions(module, focused), name, settings)
        for rule in rules:
            timed("rules", lambda: list(rule(facts).check()))
        per_file.append((time.process_time() - began, name, len(text.splitlines()), sorted(may)))

    total = sum(spent.values())
    print(f"{len(files)} files, {len(survivors)} past the substring prefilter, {len(parsed)} parsed with libcst")
    for phase, seconds in spent.items():
        print(f"  {phase:45s} {seconds * 1000:8.0f} ms")
    print(f"  {'total':45s} {total * 1000:8.0f} ms")
    print("files parsed with libcst (focus + parse + facts + rules):")
    for seconds, name, lines, may in sorted(per_file, reverse=True):
        print(f"  {seconds * 1000:7.0f} ms {lines:6d} lines {name}  {' '.join(may)}")
    from amplint.engine import lint_text

    began = time.process_time()
    for name, text, *_ in parsed:
        lint_text(text, name, settings)
    print(f"real lint_text of the parsed files: {(time.process_time() - began) * 1000:.0f} ms")
    print(f"1-min load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
