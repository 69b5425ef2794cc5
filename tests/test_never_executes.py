"""Linting reads files; it never imports or runs them, whatever they are named."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

AMPLINT = Path(sys.executable).with_name("amplint")  # the console script, as pre-commit runs it

PAYLOAD = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\nimport torch\nwith torch.cuda.amp.autocast():\n    pass\n"
# Names Python or amplint's own imports would pick up if the linted folder were on sys.path.
HOSTILE_NAMES = ["json.py", "re.py", "os.py", "click.py", "libcst.py", "typing.py", "enum.py", "pathlib.py",
                 "sitecustomize.py", "usercustomize.py", "conftest.py", "setup.py", "__main__.py", "amplint.py"]


@pytest.mark.skipif(not AMPLINT.exists(), reason="needs the installed console script")
@pytest.mark.parametrize("mode", [[], ["--fix", "--unsafe-fixes"], ["--diff"], ["--no-prefilter", "--select", "ALL"]])
def test_linted_code_is_never_run(tmp_path, mode):
    marker = tmp_path / "marker"
    project = tmp_path / "project"
    project.mkdir()
    for name in HOSTILE_NAMES:
        (project / name).write_text(PAYLOAD.format(marker=str(marker)))
    (project / "evil.pth").write_text(f"import pathlib; pathlib.Path({str(marker)!r}).write_text('pth')\n")
    (project / "pyproject.toml").write_text("[tool.amplint]\nselect = ['AMP']\n")
    env = {**os.environ, "PYTHONPATH": ""}
    run = subprocess.run([str(AMPLINT), "check", "--no-cache", *mode, "."], cwd=project, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode in (0, 1), run.stderr
    assert not marker.exists(), f"linting ran user code: {marker.read_text()}"
    if not mode or mode[0] == "--no-prefilter":
        assert run.stdout.count("AMP001") >= len(HOSTILE_NAMES)  # every file was read
