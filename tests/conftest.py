"""Shared fixtures: an in-process CLI runner, a subprocess runner, and throwaway test rules.

The test rules (codes AMP991-AMP994) have fixed messages, spans and fixes, so the output
formats can be snapshotted exactly whatever the real rules' wording becomes. They are
registered only for the tests that ask for ``fake_rules``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = str(ROOT / "src")
# The tests exercise the checkout they live in, even where amplint is installed from another one
# (an editable install of a second worktree): first for in-process imports, then through
# PYTHONPATH for every amplint process a test starts.
if sys.path[:1] != [SRC]:
    sys.path.insert(0, SRC)
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")]))
# A test run started in the background by a shell (`cmd &`) inherits SIGINT ignored, and every
# process it starts would too, so the Ctrl-C tests would test nothing; children exec with the
# default disposition again once this process handles SIGINT itself.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@lru_cache(maxsize=1)
def _fake_rule_classes() -> tuple[type, ...]:
    import libcst as cst

    from amplint.model import FixSafety, Severity
    from amplint.fix import Fix, NoFix
    from amplint.rules.base import RULES, Rule

    def calls_named(facts, name):
        for site in facts.calls:
            if isinstance(site.node.func, cst.Name) and site.node.func.value == name:
                yield site

    class BadCall(Rule):
        """
        ## What it does
        Test rule: flags `bad_call(...)`.
        """

        code = "AMP991"
        name = "test-bad-call"
        summary = "Test rule with a safe fix"
        fix_safety = FixSafety.SAFE
        triggers = (r"bad_call",)

        def check(self):
            for site in calls_named(self.facts, "bad_call"):
                fix = Fix.safe("Replace with `good_call`", {site.node.func: cst.Name("good_call")})
                yield self.violation(site.node, "`bad_call` is not allowed", fix=fix)

    class RiskyCall(Rule):
        code = "AMP992"
        name = "test-risky-call"
        summary = "Test rule with an unsafe fix"
        severity = Severity.WARNING
        fix_safety = FixSafety.UNSAFE
        triggers = (r"risky",)

        def check(self):
            for site in calls_named(self.facts, "risky"):
                fix = Fix.unsafe("Replace with `careful`", {site.node.func: cst.Name("careful")})
                yield self.violation(site.node, "`risky` may change results", fix=fix)

    class InfoCall(Rule):
        code = "AMP993"
        name = "test-info"
        summary = "Test rule, info severity, no fix"
        severity = Severity.INFO
        triggers = (r"note_me",)

        def check(self):
            for site in calls_named(self.facts, "note_me"):
                yield self.violation(site.node, "a note, with a comma: and a colon", fix=NoFix("nothing to fix"))

    class Explodes(Rule):
        code = "AMP994"
        name = "test-explodes"
        summary = "Test rule that crashes"
        default_enabled = False
        triggers = (r"explode",)

        def check(self):
            raise ValueError("boom")
            yield  # pragma: no cover

    classes = (BadCall, RiskyCall, InfoCall, Explodes)
    for cls in classes:
        RULES.pop(cls.code, None)
    return classes


@pytest.fixture
def fake_rules():
    from amplint.rules.base import RULES

    classes = _fake_rule_classes()
    for cls in classes:
        RULES[cls.code] = cls
    try:
        yield {cls.code: cls for cls in classes}
    finally:
        for cls in classes:
            RULES.pop(cls.code, None)


# The human summary line `amplint check` prints last on stdout (as ruff does).
SUMMARY_LINE = re.compile(
    r"(?:Found \d+ errors?\b|All checks passed!|No findings in the files checked\.|Fixed \d+ errors?\.|No errors fixed\.)"
)


class Run:
    def __init__(self, exit_code: int, stdout: str, stderr: str) -> None:
        self.exit_code, self.stdout, self.stderr = exit_code, stdout, stderr

    @property
    def summary(self) -> str | None:
        """The summary line at the end of stdout, if there is one."""
        lines = self.stdout.splitlines()
        return lines[-1] if lines and SUMMARY_LINE.match(lines[-1]) else None

    @property
    def report(self) -> str:
        """stdout without the summary line (and the blank line the full format puts before it)."""
        if self.summary is None:
            return self.stdout
        body = self.stdout[: self.stdout.rstrip("\n").rfind("\n") + 1]
        return body[:-1] if body.endswith("\n\n") else body

    def __repr__(self) -> str:  # shown when an assertion fails
        return f"Run(exit_code={self.exit_code}, stdout={self.stdout!r}, stderr={self.stderr!r})"


class _EntryPoint:
    """``amplint.cli.main`` in the shape click's CliRunner invokes (a name and ``main(args=...)``)."""

    name = "amplint"

    def main(self, args, prog_name=None, **_extra):
        from amplint.cli.main import main

        main(list(args))


_ENTRY_POINT = _EntryPoint()


@pytest.fixture
def cli(tmp_path, monkeypatch):
    """Run ``amplint ARGS`` in-process with the current directory at ``tmp_path``."""
    from click.testing import CliRunner

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AMPLINT_CACHE_DIR", raising=False)

    def run(*args: str, input: str | bytes | None = None) -> Run:
        # Through the real entry point: a plain check takes the click-free parser, the rest click.
        result = CliRunner().invoke(_ENTRY_POINT, list(args), input=input, prog_name="amplint")
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return Run(result.exit_code, result.stdout, result.stderr)

    return run


@pytest.fixture
def amplint_exe(tmp_path):
    """Run ``python -m amplint ARGS`` as a real process (for exit codes, imports, tracebacks)."""

    def run(*args: str, cwd: Path | None = None, input: bytes | None = None, env: dict | None = None) -> Run:
        environ = {**os.environ, **(env or {})}
        environ.pop("AMPLINT_CACHE_DIR", None)
        proc = subprocess.run(
            [sys.executable, "-m", "amplint", *args],
            cwd=cwd or tmp_path,
            input=input,
            capture_output=True,
            env=environ,
            timeout=120,
        )
        return Run(proc.returncode, proc.stdout.decode(), proc.stderr.decode())

    return run


@pytest.fixture
def files(tmp_path):
    """``files({"a.py": "text", ...})`` writes files under ``tmp_path``; returns ``tmp_path``."""

    def make(mapping: dict[str, str], root: Path | None = None) -> Path:
        base = root or tmp_path
        for rel, text in mapping.items():
            path = base / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return base

    return make
