"""`amplint verify` end to end through the command line: output, JSON, PNG, exit codes."""

from __future__ import annotations

import json

import jsonschema
import pytest

from verify_helpers import TRAINING, run_cli

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

SCHEMA = {
    "type": "object",
    "required": ["schema_version", "verdict", "exit_code", "criteria", "checks", "findings", "stats", "runs",
                 "warnings", "notes", "environment"],
    "properties": {
        "verdict": {"enum": ["trains", "failed", "error", "inconclusive"]},
        "exit_code": {"enum": [0, 1, 2, 3]},
        "checks": {"type": "array", "items": {"type": "object", "required": ["name", "ok", "detail", "inconclusive"]}},
        "warnings": {"type": "array", "items": {"type": "string"}},
        "notes": {"type": "array", "items": {"type": "string"}},
        "findings": {
            "type": "array",
            "items": {"type": "object", "required": ["code", "message", "path", "line"],
                      "properties": {"code": {"type": "string", "pattern": "^AMP0[0-9]{2}$"}, "line": {"type": "integer"}}},
        },
        "stats": {"type": "object", "required": ["amp"]},
        "runs": {
            "type": "object",
            "properties": {
                "amp": {"type": "object", "required": ["steps", "status"],
                        "properties": {"steps": {"type": "array", "items": {
                            "type": "object",
                            "required": ["index", "loss", "scale_before", "scale_after", "applied", "grad_norm", "wall_s"]}}}},
            },
        },
        "environment": {"type": "object", "required": ["torch", "amplint"]},
    },
}


@pytest.mark.slow
def test_correct_script_table_json_and_plot(tmp_path):
    out_json, out_png = tmp_path / "r.json", tmp_path / "r.png"
    proc = run_cli("verify", TRAINING / "correct.py", "--device", "cpu", "--steps", "40",
                   "--json", out_json, "--plot", out_png, "--", "--steps", "40")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "criteria (fixed before the runs):" in out.split("step 0")[0]  # printed before the runs
    for row in ("steps (applied/skipped)", "loss scale min/max/final", "steps/s after warm-up",
                "samples/s after warm-up", "peak memory (peak RSS)", "runtime findings: none"):
        assert row in out
    assert out.rstrip().splitlines()[-1].startswith("verdict: TRAINS")
    doc = json.loads(out_json.read_text())
    jsonschema.validate(doc, SCHEMA)
    assert doc["verdict"] == "trains" and len(doc["runs"]["amp"]["steps"]) == 40
    assert doc["stats"]["amp"]["steps_per_s"] > 0 and doc["stats"]["reference"]["steps"] == 40
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out_png.stat().st_size > 10_000


@pytest.mark.slow
def test_broken_script_exits_1_with_finding_in_json(tmp_path):
    out_json = tmp_path / "r.json"
    proc = run_cli("verify", TRAINING / "clip_broken.py", "--device", "cpu", "--steps", "40",
                   "--json", out_json, "--", "--steps", "40")
    assert proc.returncode == 1
    assert "clip_broken.py:" in proc.stdout and "AMP003" in proc.stdout
    doc = json.loads(out_json.read_text())
    jsonschema.validate(doc, SCHEMA)
    assert [f["code"] for f in doc["findings"]] == ["AMP003"]


@pytest.mark.slow
def test_could_not_run_exits_2():
    proc = run_cli("verify", TRAINING / "needs_gpu.py", "--device", "cpu")
    assert proc.returncode == 2
    assert proc.stdout.strip().splitlines()[-1].startswith("verdict: ERROR") and "GPU" in proc.stdout
    proc = run_cli("verify", "does/not/exist.py")
    assert proc.returncode == 2 and "no such script" in proc.stdout


@pytest.mark.slow
def test_module_form_and_runtime_main(tmp_path):
    import shutil

    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    shutil.copy(TRAINING / "correct.py", pkg / "train.py")
    import subprocess
    import sys

    # 30 steps: over 20, 12 applied updates at this learning rate move the loss by less than the
    # batch-to-batch noise, which --baseline none calls inconclusive
    proc = subprocess.run(
        [sys.executable, "-m", "amplint.runtime", "-m", "proj.train", "--steps", "30", "--baseline", "none",
         "--device", "cpu", "--", "--steps", "30"],
        capture_output=True, text=True, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "verdict: TRAINS - -m proj.train" in proc.stdout
