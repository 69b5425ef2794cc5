"""How long an editor waits for amplint's diagnostics after an edit (``amplint server``, warm).

Usage: python bench/lsp_latency.py [--file FILE ...] [--changes 30] [--write-docs]

Starts ``amplint server`` over stdio, opens a training file (default: ultralytics'
engine/trainer.py from the bench corpus, then a 55-line training script), then sends ``--changes`` incremental didChange
edits (a comment line typed into the training loop, then rewritten with each change, so that
every version is a new text, as typing gives) and times each from sending the change to
receiving the publishDiagnostics of that document version. The first 3 changes warm the server
up and are not counted. The same edits are then linted in this process, as the server parses
(reusing the statements an edit did not touch) and with each text parsed whole.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests"))  # the LSP client the server's tests drive it with

from lsp_client import LspClient  # noqa: E402

DEFAULT = "ultralytics-8.4.190/ultralytics/engine/trainer.py"
SHORT_SCRIPT = ROOT / "fixtures" / "training" / "clip_broken.py"  # a one-file training script
DOCS_FILE = ROOT / "docs" / "performance.md"
START, END = "<!-- lsp-bench:start -->", "<!-- lsp-bench:end -->"
WARMUP = 3
SECTION_INTRO = """How long an editor waits for diagnostics after an edit, measured by `bench/lsp_latency.py`:
`amplint server` over stdio, timed from sending a didChange to receiving the publishDiagnostics
of that document version. This is the warm path: the server has imported everything once, so
each edit costs a prefilter, a parse of the statements the edit touched and the rules, not the
interpreter start-up of a one-file `amplint check`. The last two columns lint the same edits in
the benchmark's own process: as the server parses (the statements an edit did not touch are
reused), and with each text parsed whole, as a one-file `amplint check` parses it. The protocol
adds little: the time is the parse and the facts pass of the file, so this latency moves with
the engine's single-file speed and the file's length. On a shared machine the figures move
with its load, recorded with them. The table between the markers is generated; do not edit it by
hand."""


def default_file() -> Path:
    import corpus

    corpus.prepare("ultralytics", corpus.SPEED["ultralytics"])
    return corpus.cache_dir() / "src" / DEFAULT


def _edit_line(lines: list[str]) -> int:
    """A line inside the training loop (the scaler step), where an engineer would be typing."""
    for index, line in enumerate(lines):
        if "scaler" in line and "step" in line:
            return index
    return len(lines) // 2


def in_process_seconds(path: Path, repeat: int, reuse: bool) -> list[float]:
    """The lints of the same edits in this process, without the protocol (what the server adds is
    the difference): with ``reuse``, as the server parses (reusing unchanged statements); without,
    each text parsed whole, as a one-file ``amplint check`` does."""
    import amplint.engine as engine
    from amplint.api import lint_document
    from amplint.file_settings import directory_of, settings_for_directory

    text = path.read_text(encoding="utf-8")
    row = _edit_line(text.splitlines())
    settings = settings_for_directory(directory_of(str(path)))
    before = engine._statement_reuse
    if reuse:
        engine.reuse_statements()
    try:
        lint_document(text, str(path), settings, edits=False)
        runs = []
        current = text
        for version in range(2, repeat + WARMUP + 2):
            current = _edited(current, row, version)
            start = time.perf_counter()
            lint_document(current, str(path), settings, edits=False)
            runs.append(time.perf_counter() - start)
        return runs[WARMUP:]
    finally:
        engine._statement_reuse = before


def measure(path: Path, changes: int) -> dict:
    text = path.read_text(encoding="utf-8")
    row = _edit_line(text.splitlines())
    client = LspClient([sys.executable, "-m", "amplint", "server"], cwd=path.parent)
    try:
        client.initialize(path.parent)
        uri = path.as_uri()
        start = time.perf_counter()
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})
        opened = client.wait_for("textDocument/publishDiagnostics", lambda p: p.get("version") == 1)
        open_seconds = time.perf_counter() - start
        timings = []
        for version in range(2, changes + WARMUP + 2):
            # A comment line typed into the loop, then rewritten: every version is a text the
            # server has not seen (an edit undone would find its statements parsed already).
            change = {"range": {"start": {"line": row, "character": 0}, "end": {"line": row + (version > 2), "character": 0}},
                      "text": _typed_comment(version)}
            start = time.perf_counter()
            client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]})
            published = client.wait_for("textDocument/publishDiagnostics", lambda p, v=version: p.get("version") == v)
            timings.append(time.perf_counter() - start)
        return {
            "open": open_seconds,
            "timings": timings[WARMUP:],
            "diagnostics": len(published["diagnostics"]),
            "diagnostics_on_open": len(opened["diagnostics"]),
            "lines": len(text.splitlines()),
        }
    finally:
        client.close()


def _typed_comment(version: int) -> str:
    return f"        # tuning the clip value, try {version}\n"


def _edited(text: str, row: int, version: int) -> str:
    """The document after the change of ``version`` (see :func:`measure`)."""
    lines = text.splitlines(keepends=True)
    if version > 2:
        del lines[row]
    lines.insert(row, _typed_comment(version))
    return "".join(lines)


def _shown(path: Path) -> str:
    for base in (Path.home() / ".cache" / "amplint-bench" / "src", ROOT):
        try:
            return path.relative_to(base).as_posix()
        except ValueError:
            continue
    return path.name


def render(results: list[tuple[Path, dict]], changes: int) -> str:
    from importlib.metadata import version

    rows = []
    for path, result in results:
        ms = sorted(t * 1000 for t in result["timings"])
        p90 = ms[max(0, int(round(0.9 * len(ms))) - 1)]
        rows.append(
            f"| `{_shown(path)}` ({result['lines']} lines, {result['diagnostics']} diagnostics) "
            f"| {statistics.median(ms):.1f} | {p90:.1f} | {ms[0]:.1f} – {ms[-1]:.1f} "
            f"| {result['open'] * 1000:.0f} | {statistics.median(result['in_process']) * 1000:.1f} "
            f"| {statistics.median(result['whole']) * 1000:.1f} |"
        )
    load_before = min(result["load_before"] for _, result in results)
    return "\n".join([
        START,
        f"| document | after a change, median of {changes} (ms) | 90th percentile (ms) | min – max (ms) "
        "| first diagnostics after didOpen (ms, cold) | same lints in-process, no protocol (ms) "
        "| same lints, each text parsed whole (ms) |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
        f"- Measured {datetime.date.today().isoformat()}; incremental didChange: one comment line typed into the "
        f"training loop, then rewritten with each change (every version a new text); {WARMUP} warm-up changes not counted",
        f"- Machine: {os.cpu_count()} cores, {platform.system()} {platform.release()}; Python {platform.python_version()}; "
        f"pygls {version('pygls')}; 1-min load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after the runs",
        "",
        f"Reproduce: `python bench/lsp_latency.py --changes {changes} --write-docs`",
        END,
    ])


def write_docs(block: str, path: Path = DOCS_FILE) -> None:
    text = path.read_text(encoding="utf-8")
    if START in text:
        text = re.sub(re.escape(START) + r".*?" + re.escape(END), lambda _: block, text, flags=re.DOTALL)
    else:
        text = text.rstrip("\n") + (
            "\n\n## Editor diagnostics latency (amplint server)\n\n" + SECTION_INTRO + "\n\n" + block + "\n"
        )
    path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, action="append",
                        help="a document to edit (repeatable; default: ultralytics' trainer.py and a short training script)")
    parser.add_argument("--changes", type=int, default=30, help="timed didChange edits (default 30)")
    parser.add_argument("--write-docs", action="store_true", help="rewrite the section in docs/performance.md")
    args = parser.parse_args(argv)
    paths = [path.resolve() for path in (args.file or [default_file(), SHORT_SCRIPT])]
    results = []
    for path in paths:
        load_before = os.getloadavg()[0]
        result = measure(path, args.changes)
        result["load_before"] = load_before
        result["in_process"] = in_process_seconds(path, args.changes, reuse=True)
        result["whole"] = in_process_seconds(path, args.changes, reuse=False)
        results.append((path, result))
    block = render(results, args.changes)
    print(block)
    if args.write_docs:
        write_docs(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
