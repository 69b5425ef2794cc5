"""Where the time of a one-file run goes (the pre-commit case), stage by stage.

Usage: python bench/single_file_profile.py [FILE]   (default: ultralytics' engine/trainer.py
from the bench corpus). Each stage is timed in a fresh interpreter for the imports,
then as the median of 5 runs for the work on the file.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

DEFAULT = "ultralytics-8.4.190/ultralytics/engine/trainer.py"


def _import_seconds(statement: str) -> float:
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    runs = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout) for _ in range(5)]
    return statistics.median(runs)


def _startup_seconds() -> float:
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def _median(function, repeat: int = 5) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def main() -> None:
    from corpus import cache_dir  # bench/corpus.py

    path = Path(sys.argv[1]) if len(sys.argv) > 1 else cache_dir() / "src" / DEFAULT
    import libcst as cst

    from amplint.engine import _focus_tokens_for, lint_text
    from amplint.amp import FileFacts
    from amplint.focus import focus_source
    from amplint.positions import Positions
    from amplint.rules import all_rules
    from amplint.settings import Settings

    settings = Settings()
    codes = settings.enabled_codes(str(path))
    text = path.read_text(encoding="utf-8")
    focused = focus_source(text, _focus_tokens_for(codes)) or text
    module = cst.parse_module(focused)
    facts = FileFacts(module, Positions(module), str(path), settings)
    rules = [rule for code, rule in all_rules().items() if code in codes]

    def run_rules():
        shared = FileFacts(module, Positions(module), str(path), settings)
        for rule in rules:
            list(rule(shared).check())

    rows = [
        ("interpreter start-up", _startup_seconds()),
        ("import libcst", _import_seconds("import libcst")),
        ("import amplint engine + rules + cli", _import_seconds("import amplint.cli, amplint.engine, amplint.rules")),
        ("focus (ast parse, blank definitions)", _median(lambda: focus_source(text, _focus_tokens_for(codes)))),
        ("libcst parse of the focused text", _median(lambda: cst.parse_module(focused))),
        ("facts pass", _median(lambda: FileFacts(module, Positions(module), str(path), settings))),
        ("facts pass + all rules", _median(run_rules)),
        ("positions (only when there is a finding)", _median(lambda: Positions(module)._resolved())),
        ("whole lint_text", _median(lambda: lint_text(text, str(path), settings, edits=False))),
    ]
    kept = sum(1 for line in focused.splitlines() if line.strip())
    print(f"file: {path} ({len(text.splitlines())} lines, {kept} non-blank lines parsed)")
    for name, seconds in rows:
        print(f"{name:45s} {seconds * 1000:7.1f} ms")
    del facts


if __name__ == "__main__":
    main()
