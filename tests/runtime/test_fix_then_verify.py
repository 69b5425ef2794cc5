"""The promise end to end: broken script -> `amplint check --fix --unsafe-fixes` -> verify passes.

These depend on the static rules' fixes. Each also checks that the linter's fix produces a
script that verifies clean (no runtime findings), whatever its exact text.
"""

from __future__ import annotations

import shutil

import pytest

from verify_helpers import FAMILIES, TRAINING, run_cli, run_verify

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_check_fix_then_verify_passes(family, tmp_path):
    code, _ = FAMILIES[family]
    script = tmp_path / f"{family}.py"
    shutil.copy(TRAINING / f"{family}_broken.py", script)
    before = script.read_text()
    proc = run_cli("check", "--fix", "--unsafe-fixes", script)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert script.read_text() != before, f"amplint check --fix left {family}_broken.py unchanged:\n{proc.stdout}"
    result = run_verify(script)
    assert result.exit_code == 0, [(c.name, c.detail) for c in result.checks if not c.ok] + result.findings
    assert result.findings == [], f"{code} still fires after the fix"
