"""The worked rule in docs/architecture.md is real: dropped into a copy of the package as its own
file, with nothing else changed, it is registered, documented, selectable and reports."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"


def _example_rule() -> str:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("<!-- example-rule:start -->", 1)[1].split("<!-- example-rule:end -->", 1)[0]
    code = re.search(r"^```python\n(.*)^```\s*$", block, flags=re.DOTALL | re.MULTILINE)
    assert code is not None, "docs/architecture.md lost its example rule"
    return code.group(1)


def _amplint(tmp_path: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    return subprocess.run(
        [sys.executable, "-m", "amplint", *args], cwd=tmp_path, env=env, input=stdin,
        capture_output=True, text=True, timeout=120,
    )


def test_the_documented_rule_works_from_its_own_file_alone(tmp_path):
    package = tmp_path / "site" / "amplint"
    shutil.copytree(ROOT / "src" / "amplint", package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "rules" / "amp900_autocast_cache_disabled_in_loop.py").write_text(_example_rule(), encoding="utf-8")
    (tmp_path / "train.py").write_text(textwrap.dedent("""\
        import torch

        for x, y in loader:
            with torch.autocast("cuda", cache_enabled=False):
                loss = model(x)
            loss.backward()
            optimizer.step()
    """), encoding="utf-8")

    run = _amplint(tmp_path, "check", "--no-cache", "--output-format", "concise", "--select", "AMP900", "train.py")
    assert run.returncode == 1, run.stderr
    assert run.stdout.splitlines()[0] == "train.py:4:47: AMP900 autocast's weight cache is off inside the training loop"

    assert "AMP900" in _amplint(tmp_path, "rules").stdout
    assert "## What it does" in _amplint(tmp_path, "rule", "AMP900").stdout

    # The rule's own examples hold, through the same engine the example tests use.
    check = textwrap.dedent("""\
        from amplint.engine import lint_text
        from amplint.rules import all_rules
        from amplint.settings import Settings

        rule = all_rules()["AMP900"]
        codes = lambda code: [f.code for f in lint_text(code, "x.py", Settings(select=("AMP900",))).findings]
        assert all(codes(example) == [] for example in rule.valid)
        assert all(codes(example) == ["AMP900"] for example in rule.invalid)
        assert codes(rule.doc_code_block("Example")) == ["AMP900"]
        assert codes(rule.doc_code_block("Use instead")) == []
        print("examples hold")
    """)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    proc = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "examples hold", proc.stderr
