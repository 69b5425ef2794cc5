"""The pre-commit hooks in .pre-commit-hooks.yaml, run for real with ``pre-commit try-repo``.

``try-repo`` installs the hook repository at a commit into its own virtual environment
(``pip install .``, so it needs PyPI). To test the working tree as it is — committed or not,
in a fresh clone or mid-change — the test copies the package sources into a temporary git
repository with one commit and points ``try-repo`` at that. (Pointed at a dirty checkout,
``try-repo`` commits tracked changes into a shadow clone but leaves untracked files out.)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
GIT_ENV = {
    "GIT_AUTHOR_NAME": "amplint tests",
    "GIT_AUTHOR_EMAIL": "tests@amplint.invalid",
    "GIT_COMMITTER_NAME": "amplint tests",
    "GIT_COMMITTER_EMAIL": "tests@amplint.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}
TRAIN = "from torch.cuda.amp import autocast\n\nwith autocast():\n    pass\n"


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **GIT_ENV})


def pre_commit_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("pre-commit")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "pre_commit"]


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory) -> Path:
    """The hooks file and the package as in this working tree, committed in a scratch repo."""
    repo = tmp_path_factory.mktemp("hook-repo")
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    shutil.copytree(ROOT / "src", repo / "src", ignore=ignore)
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, repo / name)
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "hooks under test", cwd=repo)
    return repo


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


def user_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "user"
    repo.mkdir()
    (repo / "train.py").write_text(TRAIN)
    (repo / "notes.txt").write_text("from torch.cuda.amp import autocast\n")  # not Python: not passed
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "user code", cwd=repo)
    return repo


def try_repo(hook: str, repo: Path, hook_repo: Path, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(home)}
    env.pop("AMPLINT_CACHE_DIR", None)
    return subprocess.run(
        [*pre_commit_cmd(), "try-repo", str(hook_repo), hook, "--all-files", "--color", "never"],
        cwd=repo, capture_output=True, text=True, env=env, timeout=900,
    )


def test_hooks_file_declares_both_hooks():
    import yaml  # a dependency of pre-commit

    hooks = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"amplint", "amplint-fix"}
    assert hooks["amplint"]["entry"].split()[:2] == ["amplint", "check"]
    assert hooks["amplint-fix"]["entry"].split()[:3] == ["amplint", "check", "--fix"]
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["types_or"] == ["python", "pyi", "jupyter"]
        assert hook["require_serial"] is False


def test_amplint_hook_fails_on_findings(tmp_path, hook_repo, pre_commit_home):
    repo = user_repo(tmp_path)
    proc = try_repo("amplint", repo, hook_repo, pre_commit_home)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    assert "amplint" in output and "Failed" in output
    assert re.search(r"^train\.py:\d+:\d+: AMP001 \[\*\] ", output, re.MULTILINE), output
    assert "notes.txt" not in output
    assert (repo / "train.py").read_text() == TRAIN  # reporting changes nothing


def test_amplint_fix_hook_rewrites_to_torch_amp(tmp_path, hook_repo, pre_commit_home):
    repo = user_repo(tmp_path)
    proc = try_repo("amplint-fix", repo, hook_repo, pre_commit_home)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output  # pre-commit fails a hook that modified files
    assert "files were modified by this hook" in output
    fixed = (repo / "train.py").read_text()
    assert "torch.cuda.amp" not in fixed
    assert fixed == 'from torch.amp import autocast\n\nwith autocast("cuda"):\n    pass\n'
    # Once fixed, both hooks pass.
    git("add", "-A", cwd=repo)
    assert try_repo("amplint", repo, hook_repo, pre_commit_home).returncode == 0
    assert try_repo("amplint-fix", repo, hook_repo, pre_commit_home).returncode == 0
