"""The fast tier (`pytest -m "not slow"`) leaves out every test module that starts torch or a
training, verify or pre-commit process, so a contributor's inner loop never waits on one.

The check is static: a module that imports torch, asks for it with importorskip, or drives
`amplint verify`/pre-commit through the shared helpers must carry `pytestmark = pytest.mark.slow`.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
HEAVY_MODULES = {"torch", "lightning", "accelerate", "transformers", "deepspeed"}
HEAVY_HELPERS = {"run_verify", "run_cli", "run_script"}


def _starts_heavy_work(tree: ast.Module) -> str | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in HEAVY_MODULES:
                    return f"imports {alias.name}"
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in HEAVY_MODULES:
                return f"imports from {node.module}"
            for alias in node.names:
                if alias.name in HEAVY_HELPERS:
                    return f"uses {alias.name}"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "importorskip"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and str(node.args[0].value).split(".")[0] in HEAVY_MODULES
        ):
            return f"asks for {node.args[0].value}"
    return None


def _marked_slow(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "pytestmark" for target in node.targets
        ):
            return "slow" in ast.unparse(node.value)
    return False


def test_modules_that_start_heavy_work_are_marked_slow():
    unmarked = []
    for path in sorted(TESTS.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        reason = _starts_heavy_work(tree)
        if reason and not _marked_slow(tree):
            unmarked.append(f"{path.relative_to(TESTS)} {reason}")
    assert unmarked == []


def test_the_static_check_sees_each_kind_of_heavy_module():
    heavy = [
        "import torch\n",
        "from torch import nn\n",
        "import pytest\ntorch = pytest.importorskip('torch')\n",
        "from verify_helpers import run_verify\n",
    ]
    for source in heavy:
        assert _starts_heavy_work(ast.parse(source)), source
    assert _starts_heavy_work(ast.parse("import json\nfrom amplint.api import lint_source\n")) is None
    assert _marked_slow(ast.parse("import pytest\npytestmark = pytest.mark.slow\n"))
    assert _marked_slow(ast.parse("import pytest\npytestmark = [pytest.mark.slow]\n"))
    assert not _marked_slow(ast.parse("import pytest\n"))
