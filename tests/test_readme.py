"""The README's quick start stays true: CI runs the README's test command, and the commands exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", section, flags=re.DOTALL)


def test_quick_start_has_two_commands_that_install_first():
    commands = _quick_start_commands()
    assert len(commands) == 2
    # Linting needs neither torch nor the dev tools: the first command installs the package alone.
    assert commands[0].startswith("pip install -e . && ")
    # The tests need the pinned frameworks too, or the framework rules' runtime tests would skip.
    assert commands[1].startswith("pip install torch==2.13.0 && pip install -e '.[dev,frameworks]' && ")


def test_the_linter_installs_without_torch():
    import tomllib

    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    assert dependencies and not any(re.match(r"torch\b", dependency) for dependency in dependencies)


def test_ci_runs_the_readme_test_command():
    test_command = _quick_start_commands()[1].rsplit(" && ", 1)[1]
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert test_command in ci_lines
    assert "python -m pip install torch==2.13.0" in ci_lines
    assert "python -m pip install -e '.[dev,frameworks]'" in ci_lines


def test_quick_start_lints_the_bundled_examples():
    lint_command = _quick_start_commands()[0].rsplit(" && ", 1)[1]
    assert lint_command.startswith("amplint check ")
    target = lint_command.split()[-1]
    assert (ROOT / target).is_dir() and any((ROOT / target).rglob("*.py"))
