"""DDP: `--nproc-per-node 2` launches torchrun (gloo on CPU); ranks are verified and merged."""

from __future__ import annotations

import json

import pytest

from verify_helpers import TRAINING, run_cli

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow


@pytest.mark.slow
def test_two_cpu_ranks_verified_and_merged(tmp_path):
    out_json = tmp_path / "ddp.json"
    # a learning rate at which 20 steps train clearly on every rank (at 1e-4 a rank's reference
    # can stay within its own noise, which is INCONCLUSIVE)
    proc = run_cli("verify", "--nproc-per-node", "2", TRAINING / "ddp_correct.py", "--device", "cpu",
                   "--steps", "20", "--max-skipped-frac", "0.2", "--json", out_json, "--", "--steps", "20", "--lr", "3e-4")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "never initialised a process group" not in proc.stdout
    assert "rank 0: trains (20 steps" in proc.stdout and "rank 1: trains (20 steps" in proc.stdout
    doc = json.loads(out_json.read_text())
    assert [r["rank"] for r in doc["ranks"]] == [0, 1]
    # the ranks saw different data shards: their losses differ, so these really are two runs
    assert doc["ranks"][0]["final_loss"] != doc["ranks"][1]["final_loss"]
    assert doc["findings"] == []
