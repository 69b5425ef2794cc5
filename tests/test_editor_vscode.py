"""The VS Code extension in editors/vscode: its node tests (the server command and client options,
and a handshake with the real ``amplint server`` over the language client's JSON-RPC layer), and
the .vsix that ``vsce package`` builds from it. .ci/run runs ``npm ci`` there first."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from editor_tools import missing

pytestmark = pytest.mark.slow

EXTENSION = Path(__file__).resolve().parent.parent / "editors" / "vscode"


@pytest.fixture(scope="module")
def npm() -> str:
    npm = shutil.which("npm")
    if npm is None:
        missing("npm is not installed: the VS Code extension's tests need node and npm")
    if not (EXTENSION / "node_modules").is_dir():
        missing("editors/vscode/node_modules is missing: run `npm ci` there (.ci/run does)")
    return npm


def test_node_tests_pass_and_none_is_left_out(npm):
    proc = subprocess.run(
        [npm, "test"], cwd=EXTENSION, capture_output=True, text=True, timeout=300,
        env={**os.environ, "AMPLINT_PYTHON": sys.executable},
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    declared = sum(
        len(re.findall(r"^test\(", path.read_text(encoding="utf-8"), re.M))
        for path in (EXTENSION / "src" / "test").glob("*.test.ts")
    )
    summary = dict(re.findall(r"^# (pass|fail|skipped|cancelled|todo) (\d+)$", proc.stdout, re.M))
    assert declared >= 2
    assert summary == {"pass": str(declared), "fail": "0", "skipped": "0", "cancelled": "0", "todo": "0"}, proc.stdout[-2000:]


def test_vsix_holds_the_compiled_extension_and_its_client_only(npm, tmp_path):
    vsix = tmp_path / "amplint.vsix"
    proc = subprocess.run(
        [npm, "exec", "--", "vsce", "package", "--skip-license", "--out", str(vsix)],
        cwd=EXTENSION, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with zipfile.ZipFile(vsix) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read("extension/package.json"))
    assert {"extension/out/extension.js", "extension/out/serverOptions.js",
            "extension/node_modules/vscode-languageclient/package.json"} <= names
    assert not [name for name in names if name.startswith(("extension/src/", "extension/out/test/"))]
    assert not [name for name in names if "/node_modules/typescript/" in name or "/node_modules/@vscode/vsce/" in name]
    assert manifest["main"] == "./out/extension.js"
    assert manifest["activationEvents"] == ["onLanguage:python"]
