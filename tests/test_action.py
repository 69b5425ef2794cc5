"""The composite GitHub Action (action.yml): its shape, and its lint step run as the runner would."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
STEPS = ACTION["runs"]["steps"]
DEPRECATED = "import torch\nwith torch.cuda.amp.autocast():\n    pass\n"


def step(name: str) -> dict:
    return next(s for s in STEPS if s.get("name") == name)


def test_is_a_composite_action_that_uploads_sarif():
    assert ACTION["runs"]["using"] == "composite"
    uses = [s.get("uses", "") for s in STEPS]
    assert any(u.startswith("actions/setup-python@") for u in uses)
    assert any(u.startswith("github/codeql-action/upload-sarif@") for u in uses)
    upload = next(s for s in STEPS if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    assert upload["with"]["sarif_file"] == "${{ steps.lint.outputs.sarif-file }}"
    assert set(ACTION["outputs"]) == {"sarif-file", "exit-code"}


def test_inputs_never_reach_a_script_as_text():
    # ${{ inputs.x }} inside run: would let an input inject shell code; env: is the safe way.
    for s in STEPS:
        if "run" in s:
            assert "${{" not in s["run"], s["name"]
            assert s["shell"] == "bash"


def test_install_step_installs_the_requested_amplint_or_the_action_checkout():
    script = step("Install amplint")["run"]
    assert '"${AMPLINT_REQUIREMENT:-$GITHUB_ACTION_PATH}"' in script
    assert step("Install amplint")["env"] == {"AMPLINT_REQUIREMENT": "${{ inputs.version }}"}


def run_lint_step(tmp_path: Path, **inputs: str) -> tuple[subprocess.CompletedProcess, dict]:
    values = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()} | inputs
    lint = step("Run amplint")
    env = {key: re.sub(r"\$\{\{ inputs\.([\w-]+) \}\}", lambda m: values[m.group(1)], value)
           for key, value in lint["env"].items()}
    outputs = tmp_path / "github_output"
    outputs.write_text("")
    environ = {**os.environ, **env, "GITHUB_OUTPUT": str(outputs),
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    environ.pop("AMPLINT_CACHE_DIR", None)
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", lint["run"]], cwd=tmp_path, env=environ, capture_output=True,
                          text=True, timeout=120)
    return proc, dict(line.split("=", 1) for line in outputs.read_text().splitlines())


def test_lint_step_writes_valid_sarif_and_reports_findings(tmp_path):
    (tmp_path / "train.py").write_text(DEPRECATED)
    proc, outputs = run_lint_step(tmp_path, args="--no-cache")
    assert proc.returncode == 0, proc.stderr  # findings do not stop the step: the upload comes first
    assert outputs == {"sarif-file": "amplint.sarif", "exit-code": "1"}
    sarif = json.loads((tmp_path / "amplint.sarif").read_text(encoding="utf-8"))
    schema = json.loads((ROOT / "tests" / "schemas" / "sarif-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(sarif)
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == "AMP001"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "train.py"


def test_lint_step_clean_tree(tmp_path):
    (tmp_path / "ok.py").write_text("x = 1\n")
    proc, outputs = run_lint_step(tmp_path, args="--no-cache", **{"sarif-file": "reports/out.sarif"})
    assert proc.returncode == 0, proc.stderr
    assert outputs == {"sarif-file": "reports/out.sarif", "exit-code": "0"}
    assert json.loads((tmp_path / "reports" / "out.sarif").read_text())["runs"][0]["results"] == []


@pytest.mark.parametrize("inputs", [{"src": "missing.py"}, {"args": "--select NOPE"}])
def test_lint_step_fails_on_errors_with_an_annotation(tmp_path, inputs):
    proc, outputs = run_lint_step(tmp_path, **inputs)
    assert proc.returncode == 2
    assert outputs["exit-code"] == "2"
    assert "::error title=amplint::amplint could not run (exit 2)" in proc.stdout


def test_fail_on_findings_runs_only_for_findings():
    fail = step("Fail on findings")
    assert fail["if"] == "inputs.fail-on-findings == 'true' && steps.lint.outputs.exit-code == '1'"
    assert fail["run"].rstrip().endswith("exit 1")
