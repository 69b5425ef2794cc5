"""Side-by-side speed benchmark: amplint vs TorchFix, Fixit, ruff and a regex floor.

Runs every tool on the `speed` corpus (transformers + timm + ultralytics, see
corpus.py), and amplint, ruff and TorchFix on single files of it (the pre-commit
case, see one_file.py), interleaved round-robin so that machine noise (thermal,
other load) hits every tool alike, and reports median and min-max wall time and
peak memory. Also checks the performance targets from the design.

Usage:
    python bench/speed.py                      # 3 reps, TorchFix/Fixit on a file subset
    python bench/speed.py --reps 5 --full      # TorchFix/Fixit on the full corpus (slow)
    python bench/speed.py --one-file           # only the one-file rows (7 reps, about a minute)
    python bench/speed.py --write-docs         # also update docs/performance.md

Other tools are installed in their own venv (<cache>/tools-venv) so that their
dependencies (TorchFix pins libcst) never mix with amplint's.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # sibling script, not a package
import one_file  # sibling script, not a package

REPO_ROOT = Path(__file__).resolve().parent.parent
DOCS_FILE = REPO_ROOT / "docs" / "performance.md"
START_MARKER, END_MARKER = "<!-- bench:start -->", "<!-- bench:end -->"

TOOL_PINS = ["torchfix==0.7.0", "fixit==2.2.1", "ruff==0.17.6"]
GNU_TIME = "/usr/bin/time"

# The floor for "look at every byte": read each file and scan it with one regex.
REGEX_FLOOR = r"""
import os, re, sys
rx = re.compile(rb"autocast|GradScaler|\bamp\b|unscale_")
hits = 0
for top in sys.argv[1:]:
    for d, _, files in os.walk(top):
        for f in files:
            if f.endswith(".py"):
                with open(os.path.join(d, f), "rb") as fh:
                    hits += len(rx.findall(fh.read()))
print(hits)
"""


@dataclass
class Tool:
    key: str
    label: str
    cmd: list[str]
    # Wall times are multiplied by this to stand for the full corpus, when the
    # tool is too slow to run on all of it every time.
    scale: float = 1.0
    note: str = ""
    prime: bool = False  # run once untimed first (to fill a cache)
    ok_codes: tuple[int, ...] = (0, 1)
    times: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # user + system seconds, children included
    max_rss_kb: list[int] = field(default_factory=list)
    tree_rss_kb: list[int] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- measurement


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                kids += [int(k) for k in fh.read().split()]
    except OSError:
        pass
    return kids


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    except (OSError, IndexError, ValueError):
        return 0


def _tree_rss_kb(root: int) -> int:
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += _rss_kb(pid)
        stack += _children(pid)
    return total


class TreeRssSampler(threading.Thread):
    """Peak of the summed RSS of a process tree, sampled.

    GNU time's %M is the largest single process only; a tool with a worker
    pool uses the sum. 50 ms sampling misses sub-sample spikes but costs
    almost no CPU, which matters on a small machine.
    """

    def __init__(self, pid: int, interval: float = 0.05):
        super().__init__(daemon=True)
        self.pid, self.interval, self.peak_kb = pid, interval, 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            # Subtract /usr/bin/time itself: it is measurement, not the tool.
            self.peak_kb = max(self.peak_kb, _tree_rss_kb(self.pid) - _rss_kb(self.pid))
            self._stop_event.wait(self.interval)

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


def run_once(tool: Tool, cwd: Path) -> tuple[float, int, int, int, str, float]:
    """Wall seconds, largest-process RSS KiB, tree RSS KiB, exit code, stderr tail, CPU seconds."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as rss_file:
        cmd = [GNU_TIME, "-f", "%U %S %M", "-o", rss_file.name, *tool.cmd] if has_gnu_time() else tool.cmd
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        sampler = TreeRssSampler(proc.pid)
        sampler.start()
        _, err = proc.communicate()
        wall = time.perf_counter() - start
        sampler.stop()
        text = rss_file.read().strip().splitlines()
        fields = text[-1].split() if has_gnu_time() and text else []
        max_rss = int(fields[2]) if len(fields) == 3 and fields[2].isdigit() else 0
        cpu = float(fields[0]) + float(fields[1]) if len(fields) == 3 else float("nan")
    # GNU time passes the tool's exit status through; its CPU figure includes reaped children
    # (amplint's worker processes).
    return wall, max_rss, sampler.peak_kb, proc.returncode, err.decode(errors="replace")[-2000:], cpu


_GNU_TIME: bool | None = None


def has_gnu_time() -> bool:
    global _GNU_TIME
    if _GNU_TIME is None:
        try:
            probe = subprocess.run([GNU_TIME, "-f", "%M", "true"], check=False, capture_output=True, text=True)
            _GNU_TIME = probe.returncode == 0 and probe.stderr.strip().isdigit()
        except OSError:
            _GNU_TIME = False
    return _GNU_TIME


def measure(tools: list[Tool], reps: int, cwd: Path) -> None:
    for rep in range(reps):
        for tool in tools:  # round-robin: each rep runs every tool once
            if tool.prime and rep == 0:
                # Prime right before the first timed run: amplint's cache key
                # includes its own code, so an edit in between would turn
                # the "warm" run cold.
                run_once(tool, cwd)
            wall, max_rss, tree_rss, code, err, cpu = run_once(tool, cwd)
            print(f"  rep {rep + 1}/{reps} {tool.label}: {wall:.2f}s cpu {cpu:.2f}s rc={code}", file=sys.stderr, flush=True)
            tool.times.append(wall * tool.scale)
            tool.cpu.append(cpu * tool.scale)
            tool.max_rss_kb.append(max_rss)
            tool.tree_rss_kb.append(tree_rss)
            if code not in tool.ok_codes:
                tool.failures.append(f"rc={code}: {err.strip()[-500:]}")


# ---------------------------------------------------------------- tools


def tools_venv() -> Path:
    return corpus.cache_dir() / "tools-venv"


def ensure_tools_venv() -> Path:
    venv = tools_venv()
    bin_dir = venv / "bin"
    if not all((bin_dir / exe).exists() for exe in ("torchfix", "fixit", "ruff")):
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet",
                        "--disable-pip-version-check", *TOOL_PINS], check=True)
    return bin_dir


def py_files(dirs: list[Path]) -> list[Path]:
    return sorted(p for d in dirs for p in d.rglob("*.py"))


def subset(files: list[Path], n: int) -> list[Path]:
    # Every k-th file of the sorted list: deterministic, and spread over all
    # three packages instead of the first n files of transformers.
    if n >= len(files):
        return files
    step = len(files) / n
    return [files[int(i * step)] for i in range(n)]


def amplint_available(base: list[str]) -> bool:
    try:
        return subprocess.run([*base, "--version"], check=False, capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# Every corpus run of amplint and ruff prints the same way, one line per finding: the fair pairs
# compare linting, not the rendering of code frames.
CONCISE = ["--output-format", "concise"]


def amplint_tools(base: list[str], dirs: list[str]) -> list[Tool]:
    check = [*base, "check", "--exit-zero", *CONCISE]
    return [
        Tool("cold", "amplint cold (default rules)", [*check, "--no-cache", *dirs]),
        Tool("all", "amplint --select ALL", [*check, "--select", "ALL", "--no-cache", *dirs]),
        # A cache of its own, outside the repo and the corpus, so that the
        # timed runs hit exactly what the priming run wrote.
        Tool("warm", "amplint warm (cache hit)",
             [*check, "--cache-dir", str(corpus.cache_dir() / "amplint-cache"), *dirs], prime=True,
             note="primed by one untimed run with the same command"),
        Tool("j1", "amplint -j1", [*check, "-j1", "--no-cache", *dirs]),
        Tool("noprefilter", "amplint --no-prefilter", [*check, "--no-prefilter", "--no-cache", *dirs]),
    ]


def one_file_tools(amplint: list[str] | None, bin_dir: Path) -> tuple[list[one_file.OneFile], list[Tool]]:
    """amplint, ruff and TorchFix on each file of one_file.FILES."""
    files, tools = [], []
    for key, package, inside, what in one_file.FILES:
        path = corpus.src_dir(package, corpus.SPEED[package]) / inside
        files.append(one_file.OneFile(key, str(path), inside, what, path.read_bytes().count(b"\n")))
        commands = one_file.commands(amplint or [], str(bin_dir), str(path))
        for tool in one_file.TOOLS:
            if tool == "amplint" and amplint is None:
                continue
            tools.append(Tool(one_file.tool_key(tool, key), f"{tool} one {key} file", commands[tool]))
    return files, tools


def precompile(base: list[str]) -> str:
    """Byte-compile amplint's modules, as ``pip install`` does, so no timed run compiles them.

    Under PYTHONDONTWRITEBYTECODE (common in containers and CI) an editable checkout would
    otherwise be compiled from source on every run, which no installed amplint does.
    """
    if base[-2:] != ["-m", "amplint"]:
        return "not byte-compiled first (--amplint is not `PYTHON -m amplint`)"
    python = base[:-2]
    where = subprocess.run([*python, "-c", "import amplint, os; print(os.path.dirname(amplint.__file__))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([*python, "-m", "compileall", "-q", where], check=True, stdout=subprocess.DEVNULL)
    # The first run after an install writes the tables of compiled dataclass code
    # (amplint/dataclass_code.py) beside the bytecode; so does this untimed one.
    with tempfile.TemporaryDirectory() as folder:
        sample = Path(folder) / "sample.py"
        sample.write_text("import torch\n\nwith torch.autocast('cuda'):\n    pass\n", encoding="utf-8")
        env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run([*base, "check", "--no-cache", "--exit-zero", "-q", str(sample)], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return ("amplint's modules byte-compiled and one untimed run made before timing "
            "(as `pip install` and the first run after it do)")


def slow_tool(key: str, label: str, cmd: list[str], files: list[Path], dirs: list[str],
              n: int | None) -> Tool:
    """A tool that may be run on a subset of files and extrapolated per file count."""
    if n is None or n >= len(files):
        return Tool(key, label, [*cmd, *dirs], ok_codes=(0, 1))
    chosen = subset(files, n)
    # Said next to the figure: per-file extrapolation is only as good as the
    # subset is typical, and the line share shows how typical it is.
    line_share = count_lines(chosen) / count_lines(files)
    return Tool(key, f"{label} (extrapolated)", [*cmd, *map(str, chosen)],
                scale=len(files) / len(chosen), ok_codes=(0, 1),
                note=f"timed on {len(chosen)} of {len(files)} files (every {len(files) / len(chosen):.1f}th "
                     f"of the sorted list; {len(chosen) / len(files):.1%} of files, {line_share:.1%} of lines), "
                     f"time scaled linearly by file count ×{len(files) / len(chosen):.2f}; RSS not scaled")


def count_lines(files: list[Path]) -> int:
    return sum(f.read_bytes().count(b"\n") for f in files)


def other_tools(bin_dir: Path, files: list[Path], dirs: list[str], args: argparse.Namespace) -> list[Tool]:
    tf_n = None if args.full else args.torchfix_subset
    fx_n = None if args.full else args.fixit_subset
    return [
        slow_tool("torchfix", "torchfix --select ALL", [str(bin_dir / "torchfix"), "--select", "ALL"],
                  files, dirs, tf_n),
        slow_tool("fixit", "fixit lint", [str(bin_dir / "fixit"), "lint"], files, dirs, fx_n),
        Tool("ruffdefault", "ruff (default rules)",
             [str(bin_dir / "ruff"), "check", *CONCISE, "--no-cache", "--exit-zero", *dirs]),
        Tool("ruff", "ruff --select ALL",
             [str(bin_dir / "ruff"), "check", *CONCISE, "--select", "ALL", "--no-cache", "--exit-zero", *dirs]),
        Tool("regex", "regex floor (1 process)", [sys.executable, "-c", REGEX_FLOOR, *dirs],
             ok_codes=(0,)),
    ]


# ---------------------------------------------------------------- reporting


def version_of(cmd: list[str]) -> str:
    try:
        out = subprocess.run([*cmd, "--version"], check=False, capture_output=True, text=True, timeout=60)
        return (out.stdout or out.stderr).strip().splitlines()[0] if out.returncode == 0 else "unavailable"
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return "unavailable"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def corpus_stats(dirs: list[Path]) -> tuple[int, int, int]:
    files = py_files(dirs)
    lines = size = 0
    for f in files:
        data = f.read_bytes()
        lines += data.count(b"\n")
        size += len(data)
    return len(files), lines, size


def median_cpu(tool: Tool) -> float:
    return statistics.median(tool.cpu) if tool.cpu else float("nan")


# (amplint row, other row, what makes them like for like)
FAIR_PAIRS = (
    ("cold", "ruffdefault", "default rules against default rules, concise output, no cache"),
    ("all", "ruff", "every rule against every rule (`--select ALL`), concise output, no cache"),
)


def fair_pairs_table(by_key: dict[str, Tool]) -> list[str]:
    """The like-for-like comparisons: wall and CPU medians (min–max) and ratios (amplint / other),
    and the paired ratio: the median of the per-round ratios (each round runs both in turn, so a
    slow minute of the machine falls on both)."""
    lines = ["| comparison | amplint wall s (min–max) | other wall s (min–max) | wall ratio (paired) "
             "| amplint CPU s (min–max) | other CPU s (min–max) | CPU ratio (paired) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    rows = [(a, b, what) for a, b, what in FAIR_PAIRS] + [("cold", "regex", "amplint against reading and searching every file")]
    for a, b, what in rows:
        one, other = by_key.get(a), by_key.get(b)
        if not (one and other and one.times and other.times):
            continue
        lines.append(
            f"| {one.label} / {other.label}: {what} | {median(one):.2f} ({_span(one.times)}) "
            f"| {median(other):.2f} ({_span(other.times)}) | {median(one) / median(other):.2f} ({_paired(one.times, other.times)}) "
            f"| {median_cpu(one):.2f} ({_span(one.cpu)}) | {median_cpu(other):.2f} ({_span(other.cpu)}) "
            f"| {median_cpu(one) / median_cpu(other):.2f} ({_paired(one.cpu, other.cpu)}) |")
    return lines


def _span(values: list[float]) -> str:
    return f"{min(values):.2f}–{max(values):.2f}" if values else "–"


def _paired(ones: list[float], others: list[float]) -> str:
    """The median of the per-round ratios."""
    ratios = [a / b for a, b in zip(ones, others) if b]
    return f"{statistics.median(ratios):.2f}" if ratios else "–"


# Said under the fair pairs: the other rows compare what is not the same work.
NOT_LIKE_FOR_LIKE = (
    "Not like for like: TorchFix (`--select ALL`) and Fixit (its default rules) check other rules and parse "
    "every file with libcst, on a file subset scaled to the corpus unless `--full`: their rows show what a linter "
    "that parses every file in Python costs. amplint's warm run reads its cache; ruff's rows are without one."
)


def median(tool: Tool) -> float:
    return statistics.median(tool.times)


def peak_mb(tool: Tool) -> str:
    largest = max(tool.max_rss_kb, default=0) / 1024
    tree = max(tool.tree_rss_kb, default=0) / 1024
    return f"{largest:.0f} / {tree:.0f}" if largest else f"– / {tree:.0f}"


def format_ratio(ratio: float) -> str:
    # Two significant digits below 10 so fast tools do not all read "0.0×".
    return f"{ratio:.0f}×" if ratio >= 10 else f"{ratio:.2g}×"


def table(tools: list[Tool], baseline: Tool | None) -> list[str]:
    lines = ["| tool | median s | min–max s | CPU median s | peak RSS MB (largest process / all processes) | ratio to amplint cold |",
             "|---|---:|---:|---:|---:|---:|"]
    for tool in tools:
        if not tool.times:
            continue
        ratio = format_ratio(median(tool) / median(baseline)) if baseline and baseline.times else "n/a"
        failed = " **(failed)**" if tool.failures else ""
        lines.append(f"| {tool.label}{failed} | {median(tool):.2f} | {min(tool.times):.2f}–{max(tool.times):.2f} "
                     f"| {median_cpu(tool):.2f} | {peak_mb(tool)} | {ratio} |")
    return lines


def check_targets(by_key: dict[str, Tool]) -> list[tuple[str, str]]:
    """(PASS|FAIL|SKIP, description) for each design target."""

    def m(key: str) -> float | None:
        tool = by_key.get(key)
        return median(tool) if tool and tool.times and not tool.failures else None

    def target(desc: str, keys: tuple[str, ...], ok) -> tuple[str, str]:
        values = [m(k) for k in keys]
        if any(v is None for v in values):
            return "SKIP", desc
        return ("PASS" if ok(*values) else "FAIL"), desc

    def cpu_target(desc: str, one: str, other: str, at_most: float) -> tuple[str, str]:
        a, b = by_key.get(one), by_key.get(other)
        if not (a and b and a.cpu and b.cpu) or a.failures or b.failures:
            return "SKIP", desc
        return ("PASS" if median_cpu(a) <= at_most * median_cpu(b) else "FAIL"), desc

    amplint_rows = [t for k, t in by_key.items() if k in ("cold", "all", "warm", "j1", "noprefilter") and t.times]
    peak = max((max(t.tree_rss_kb + t.max_rss_kb) for t in amplint_rows), default=None)
    results = [
        target("cold ≥ 50× faster than torchfix", ("cold", "torchfix"), lambda c, t: t / c >= 50),
        target("--no-prefilter ≥ 5× faster than torchfix", ("noprefilter", "torchfix"), lambda n, t: t / n >= 5),
        target("default rules no slower than ruff's default rules (wall)", ("cold", "ruffdefault"), lambda c, r: c <= r),
        cpu_target("default rules no slower than ruff's default rules (CPU)", "cold", "ruffdefault", 1.0),
        target("--select ALL no slower than ruff --select ALL (wall)", ("all", "ruff"), lambda a, r: a <= r),
        cpu_target("--select ALL no slower than ruff --select ALL (CPU)", "all", "ruff", 1.0),
        cpu_target("CPU at most 3× the single-process regex floor", "cold", "regex", 3.0),
        target("warm no slower than ruff's default rules", ("warm", "ruffdefault"), lambda w, r: w <= r),
    ]
    rss_desc = "peak RSS < 300 MB (every amplint run, all processes summed)"
    results.append(("SKIP", rss_desc) if peak is None else ("PASS" if peak / 1024 < 300 else "FAIL", rss_desc))
    return results


def target_detail(by_key: dict[str, Tool]) -> list[str]:
    def m(key: str) -> float | None:
        tool = by_key.get(key)
        return median(tool) if tool and tool.times else None

    pairs = [("torchfix", "cold"), ("torchfix", "noprefilter"), ("fixit", "cold"), ("warm", "ruffdefault")]
    out = []
    for a, b in pairs:
        if m(a) and m(b):
            out.append(f"{by_key[a].label} / {by_key[b].label} = {m(a) / m(b):.1f}")
    return out


def environment_lines(env: dict[str, str], what: list[str]) -> list[str]:
    lines = [f"- Measured {time.strftime('%Y-%m-%d')}",
             (f"- Machine: {env['cores']} cores, {env['cpu']}, {env['os']}; Python {env['python']}; "
              f"1-min load average {env['load']} the run"),
             *what,
             f"- Versions: {env['versions']}",
             (f"- {env['reps']} repetitions per tool, interleaved round-robin; wall time includes interpreter "
              f"start-up; RSS from GNU time (largest process) and /proc sampling every 50 ms (all processes)."),
             f"- {env['compiled']}"]
    if env["loaded"]:
        lines.append(f"- **Warning: the machine was busy (load average above {env['cores']} cores); "
                     "every figure is inflated and the ratios are unreliable. Rerun on an idle machine.**")
    return lines


def commands_lines(tools: list[Tool], env: dict[str, str]) -> list[str]:
    body = ["", "Commands (corpus paths abbreviated as `$CORPUS`):", "", "```"]
    body += [f"{t.label}: {abbreviate(t.cmd, env)}" for t in tools if t.times]
    body += ["```", "", f"Reproduce: `{env['invocation']}`"]
    failures = [f"- {t.label}: {f}" for t in tools for f in t.failures[:1]]
    if failures:
        body += ["", "Failures:", "", *failures]
    return body


def report(tools: list[Tool], env: dict[str, str], stats: tuple[int, int, int], targets: list[tuple[str, str]],
           detail: list[str]) -> str:
    files, lines, size = stats
    by_key = {t.key: t for t in tools}
    body = ["Like for like (same rule selection, same output mode, no cache; ratio below 1: amplint is faster):", "",
            *fair_pairs_table(by_key), "", NOT_LIKE_FOR_LIKE, "", "Every run:", "", *table(tools, by_key.get("cold")), ""]
    body += environment_lines(
        env, [f"- Corpus: {env['corpus']} — {files} `.py` files, {lines:,} lines, {size / 1e6:.1f} MB"])
    body += [f"- {t.label}: {t.note}" for t in tools if t.note and t.times]
    body += ["", "Targets:", ""]
    body += [f"- {status} {desc}" for status, desc in targets]
    if detail:
        body += ["", "Ratios: " + "; ".join(detail)]
    body += commands_lines(tools, env)
    return "\n".join(body)


def one_file_report(files: list[one_file.OneFile], tools: list[Tool], env: dict[str, str]) -> str:
    by_key = {t.key: t for t in tools}
    body = [*one_file.table(files, by_key), ""]
    body += environment_lines(env, [f"- Files (`speed` corpus: {env['corpus']}):",
                                    *("  " + line for line in one_file.file_notes(files))])
    body += ["", "Targets:", ""]
    body += [f"- {status} {desc}" for status, desc in one_file.targets(by_key)]
    body += commands_lines(tools, env)
    return "\n".join(body)


def abbreviate(cmd: list[str], env: dict[str, str]) -> str:
    text = shlex.join(cmd)
    if len(cmd) > 40:  # a file subset: say how many, not all of them
        head = [c for c in cmd if not c.endswith(".py")]
        text = shlex.join(head) + f" <{len(cmd) - len(head)} files>"
    text = text.replace(env["cache_src"], "$CORPUS").replace(env["cache"], "$CACHE")
    text = text.replace(shlex.quote(sys.executable), "python")  # the interpreter that has amplint
    return re.sub(r"'?\nimport os, re.*?print\(hits\)\n'?", "<regex floor script>", text, flags=re.DOTALL)


def write_docs(block: str, path: Path = DOCS_FILE, start_marker: str = START_MARKER,
               end_marker: str = END_MARKER) -> None:
    """Replace only the text between the markers; other sections belong to others."""
    if path.exists():
        text = path.read_text(encoding="utf-8")
    else:
        text = ("# Performance\n\nHow fast amplint is, measured by `bench/speed.py` on a pinned real-world "
                "corpus (see `bench/README.md`). The table between the markers is generated; do not edit "
                "it by hand.\n\n")
    if start_marker in text and end_marker in text:
        before, rest = text.split(start_marker, 1)
        _, after = rest.split(end_marker, 1)
    else:
        before, after = text.rstrip("\n") + "\n\n", "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(f"{before}{start_marker}\n{block}\n{end_marker}{after}", encoding="utf-8")
    tmp.replace(path)


# ---------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--amplint", default=f"{shlex.quote(sys.executable)} -m amplint",
                        help="command that runs amplint (default: this interpreter's -m amplint)")
    parser.add_argument("--reps", type=int, default=None, help="repetitions per tool (default 3; 7 with --one-file)")
    parser.add_argument("--torchfix-subset", type=int, default=150, metavar="N",
                        help="time TorchFix on N files and extrapolate (default 150)")
    parser.add_argument("--fixit-subset", type=int, default=150, metavar="N",
                        help="time Fixit on N files and extrapolate (default 150)")
    parser.add_argument("--full", action="store_true", help="run TorchFix and Fixit on the full corpus")
    parser.add_argument("--one-file", action="store_true",
                        help="only the one-file rows (amplint, ruff and TorchFix on single files)")
    parser.add_argument("--packages", default="", metavar="NAMES",
                        help=f"comma-separated packages of the speed corpus to run on (default all: {', '.join(corpus.SPEED)})")
    parser.add_argument("--only", default="", help="comma-separated tool keys: "
                        "cold,all,warm,j1,noprefilter,torchfix,fixit,ruffdefault,ruff,regex, and TOOL-FILE for the one-file rows "
                        "(TOOL: amplint, ruff, torchfix; FILE: clean, findings, parsed)")
    parser.add_argument("--write-docs", action="store_true", help=f"update {DOCS_FILE.relative_to(REPO_ROOT)}")
    args = parser.parse_args(argv)
    if args.reps is None:
        args.reps = 7 if args.one_file else 3
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    chosen = [name for name in args.packages.split(",") if name] or list(corpus.SPEED)
    unknown = [name for name in chosen if name not in corpus.SPEED]
    if unknown:
        print(f"error: not in the speed corpus: {', '.join(unknown)}", file=sys.stderr)
        return 2
    packages = {name: corpus.SPEED[name] for name in chosen}
    dirs = [corpus.prepare(n, v) for n, v in packages.items()]
    files = py_files(dirs)
    dir_args = [str(d) for d in dirs]
    bin_dir = ensure_tools_venv()
    amplint = shlex.split(args.amplint)

    corpus_rows: list[Tool] = []
    has_amplint = amplint_available(amplint)
    if not has_amplint:
        print(f"warning: `{args.amplint} --version` failed; amplint rows skipped", file=sys.stderr)
    if not args.one_file:
        corpus_rows += amplint_tools(amplint, dir_args) if has_amplint else []
        corpus_rows += other_tools(bin_dir, files, dir_args, args)
    single_files, single_rows = one_file_tools(amplint if has_amplint else None, bin_dir)
    if args.only:
        keep = set(args.only.split(","))
        corpus_rows = [t for t in corpus_rows if t.key in keep]
        single_rows = [t for t in single_rows if t.key in keep]
    tools = corpus_rows + single_rows

    # amplint's cache goes to the working directory's project; keep it out of the repo.
    workdir = corpus.cache_dir() / "speed-cwd"
    workdir.mkdir(parents=True, exist_ok=True)
    compiled = precompile(amplint) if has_amplint else "amplint not run"
    # One untimed read of the corpus so every tool starts with a warm page cache.
    subprocess.run([sys.executable, "-c", REGEX_FLOOR, *dir_args], stdout=subprocess.DEVNULL, check=True)
    # Other load on the machine skews every figure; say how much there was.
    load_before = os.getloadavg()[0]
    measure(tools, args.reps, workdir)
    load_after = os.getloadavg()[0]

    env = {
        "cores": str(os.cpu_count()), "cpu": cpu_model(), "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(), "reps": str(args.reps),
        "load": f"{load_before:.2f} before, {load_after:.2f} after",
        "loaded": max(load_before, load_after) > (os.cpu_count() or 1),
        "corpus": ", ".join(f"{n}=={v}" for n, v in packages.items()),
        "versions": "; ".join([
            f"amplint: {version_of(amplint)}",
            f"torchfix {version_of([str(bin_dir / 'torchfix')])}",
            version_of([str(bin_dir / "fixit")]), version_of([str(bin_dir / "ruff")]),
        ]),
        "cache": str(corpus.cache_dir()), "cache_src": str(corpus.cache_dir() / "src"),
        "invocation": "python bench/speed.py " + shlex.join(argv if argv is not None else sys.argv[1:]),
        "compiled": compiled,
    }
    blocks = []
    if any(t.times for t in corpus_rows):
        by_key = {t.key: t for t in corpus_rows}
        block = report(corpus_rows, env, corpus_stats(dirs), check_targets(by_key), target_detail(by_key))
        blocks.append((block, START_MARKER, END_MARKER))
    if any(t.times for t in single_rows):
        blocks.append((one_file_report(single_files, single_rows, env), one_file.START_MARKER, one_file.END_MARKER))
    for block, start, end in blocks:
        print(block, end="\n\n")
        if args.write_docs:
            write_docs(block, start_marker=start, end_marker=end)
            print(f"wrote {DOCS_FILE} ({start})", file=sys.stderr)
    return 1 if any(t.failures for t in tools) else 0


if __name__ == "__main__":
    sys.exit(main())
