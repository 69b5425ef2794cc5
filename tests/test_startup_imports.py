"""What a run imports, read from ``sys.modules`` of a real process when it ends.

A pre-commit run names a few changed files; most hold no AMP text. Such a run must not pay
for libcst, the facts layer, the rule modules, the cache or the process pool.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("libcst", "amplint.amp", "amplint.semantic", "amplint.fix", "amplint.positions", "amplint.project.summarize", "amplint.project.records", "amplint.project.context")
POOL = ("concurrent.futures.process", "multiprocessing")

_RUN = """
import json, sys
from amplint.cli.main import main
try:
    main(sys.argv[2:])
except SystemExit as exc:
    code = exc.code
with open(sys.argv[1], "w") as handle:
    json.dump({"code": code, "modules": sorted(sys.modules)}, handle)
"""

CLEAN = "import os\n\nprint(os.getcwd())\n"
WITH_FINDING = "import torch\n\nif torch.is_autocast_enabled():\n    pass\n"


def run(tmp_path: Path, *args: str, stdin: str | None = None) -> tuple[int, str, set[str]]:
    report = tmp_path / "modules.json"
    proc = subprocess.run(
        [sys.executable, "-c", _RUN, str(report), *args],
        cwd=tmp_path, input=stdin, capture_output=True, text=True, timeout=120,
    )
    data = json.loads(report.read_text())
    return data["code"], proc.stdout, set(data["modules"])


def loaded(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m.startswith(prefixes))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "plain.py").write_text(CLEAN)
    (tmp_path / "pkg").mkdir()
    for name in ("a", "b", "c"):
        (tmp_path / "pkg" / f"{name}.py").write_text(CLEAN)
    return tmp_path


@pytest.mark.parametrize(
    "args",
    [("plain.py",), ("pkg",), ("plain.py", "pkg/a.py", "pkg/b.py"), ("--output-format", "json", "plain.py")],
    ids=["one-file", "directory", "named-files", "json"],
)
def test_a_clean_run_imports_no_libcst_and_no_rule_module(project, args):
    code, _, modules = run(project, "check", "--no-cache", *args)
    assert code == 0
    assert loaded(modules, HEAVY) == []
    assert loaded(modules, ("amplint.rules.amp",)) == []
    assert loaded(modules, ("amplint.cache",)) == []
    assert loaded(modules, ("click",)) == []  # cli.fastparse reads the command line
    if sys.version_info < (3, 12):  # from 3.12 dataclasses reads every class's annotations with inspect
        assert "inspect" not in modules


def test_a_clean_stdin_run_imports_no_libcst(project):
    code, _, modules = run(project, "check", "--stdin-filename", "x.py", "-", stdin=CLEAN)
    assert code == 0 and loaded(modules, HEAVY) == []


def test_rule_listing_and_docs_import_no_libcst(project):
    for args in (("rules",), ("rule", "AMP003")):
        code, out, modules = run(project, *args)
        assert code in (0, None) and "AMP003" in out
        assert loaded(modules, HEAVY) == [], args


def test_a_file_with_a_finding_imports_only_the_rules_its_text_can_trigger(project):
    (project / "amp.py").write_text(WITH_FINDING)
    code, out, modules = run(project, "check", "--no-cache", "--output-format", "concise", "amp.py")
    assert code == 1 and " AMP014 " in out
    rule_modules = loaded(modules, ("amplint.rules.amp",))
    assert "amplint.rules.amp014_autocast_enabled_check_without_device" in rule_modules
    # No scaler, no GradScaler, no `.scale(`: the scaler rules cannot fire and are not imported.
    assert "amplint.rules.amp009_scaler_update_missing_or_misordered" not in rule_modules
    assert "amplint.rules.amp004_scaler_in_loop" not in rule_modules
    assert loaded(modules, ("click",)) == []


def test_help_and_the_other_commands_still_have_click(project):
    code, out, modules = run(project, "check", "--help")
    assert code == 0 and "--output-format" in out and "click" in modules
    code, out, modules = run(project, "rules")
    assert code in (0, None) and "AMP003" in out and "click" in modules


def test_a_handful_of_files_is_linted_without_a_process_pool(project):
    for name in ("a", "b", "c"):
        (project / "pkg" / f"{name}.py").write_text(WITH_FINDING)
    code, out, modules = run(project, "check", "--no-cache", "-j", "2", "--output-format", "concise", "pkg")
    assert code == 1 and out.count(" AMP014 ") == 3
    assert loaded(modules, POOL) == []


def test_stdin_writes_no_cache(project):
    cache = project / "stdin-cache"
    code, out, _ = run(
        project, "check", "--cache-dir", str(cache), "--output-format", "concise", "--stdin-filename", "x.py", "-",
        stdin=WITH_FINDING,
    )
    assert code == 1 and " AMP014 " in out
    assert not cache.exists()


def test_a_named_clean_file_with_a_syntax_error_is_reported_without_libcst(project):
    (project / "broken.py").write_text("x = (\n")
    code, out, modules = run(project, "check", "--no-cache", "--output-format", "concise", "broken.py")
    assert code == 1
    assert out.startswith("broken.py:1:5: AMP000 SyntaxError: '(' was never closed")
    assert loaded(modules, HEAVY) == []


def test_stdin_with_a_syntax_error_and_no_amp_text_is_reported_not_passed(project):
    code, out, _ = run(project, "check", "--no-cache", "--output-format", "concise", "--stdin-filename", "x.py", "-",
                       stdin="x = (\n")
    assert code == 1
    assert out.startswith("x.py:1:5: AMP000 SyntaxError: '(' was never closed")
