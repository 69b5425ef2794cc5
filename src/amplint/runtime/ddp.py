"""DDP: ``--nproc-per-node N`` launches the script with torchrun, one instrumented run per rank.

Each rank records its own steps and findings into a JSON file; once torchrun returns, the
launching process merges them: the table shows rank 0's run, the findings are the union over
ranks, the verdict is the worst rank's. The AMP run and the FP32 reference are two torchrun
launches because a process group cannot be re-initialised reliably inside one process.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from typing import Any

from .findings import finding_key, sort_findings
from .process_groups import become_group_leader, end_groups, end_process_tree
from .runner import RunOutcome, Target


def run_distributed(
    result: Any, target: Target, *, steps: int, seed: int, nproc: int, progress: bool | None, timeout: float
) -> Any:
    from .verdict import EXIT_ERROR, VERDICTS, judge, worst

    modes = ["amp"] + (["fp32"] if result.criteria.baseline == "fp32" else [])
    per_mode: dict[str, list[RunOutcome | None]] = {}
    for mode in modes:
        with tempfile.TemporaryDirectory(prefix="amplint-ddp-") as out:
            cmd = [
                sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
                "-m", "amplint.runtime.ddp", "--mode", mode, "--out", out, "--steps", str(steps),
                "--seed", str(seed), "--device", result.device, "--dtype", result.dtype,
                "--checkpoints", os.path.join(out, "checkpoints"),
            ]
            cmd += ["--progress"] if (sys.stderr.isatty() if progress is None else progress) else []
            cmd += ["--eval", result.criteria.eval_spec] if result.criteria.eval_spec else []
            cmd += ["--script", target.script] if target.script else ["--module", target.module or ""]
            cmd += ["--", *target.args]
            returncode = _launch(cmd, timeout)
            if returncode is None:
                result.message = f"the {mode} torchrun launch did not finish within --timeout {timeout:g} s"
                result.exit_code = EXIT_ERROR
                return result
            runs: list[RunOutcome | None] = []
            for rank in range(nproc):
                path = os.path.join(out, f"rank{rank}.json")
                if os.path.exists(path):
                    with open(path, encoding="utf-8") as fh:
                        runs.append(RunOutcome.from_wire(json.load(fh)))
                else:
                    runs.append(None)
            per_mode[mode] = runs
            if returncode != 0 and all(r is None for r in runs):
                result.message = f"torchrun exited with status {returncode} before any rank reported"
                result.exit_code = EXIT_ERROR
                return result

    rank_results = []
    for rank in range(nproc):
        amp = per_mode["amp"][rank]
        ref = per_mode["fp32"][rank] if "fp32" in per_mode else None
        rank_results.append(judge(replace(result, ranks=[], checks=[]), amp, ref))

    from .criteria import loss_summary

    ranks = []
    for rank, r in enumerate(rank_results):
        summ = loss_summary(r.criteria, r.amp.steps, None) if r.amp else {"amp_final": None}
        ranks.append(
            {
                "rank": rank,
                "exit_code": r.exit_code,
                "verdict": VERDICTS[r.exit_code],
                "steps": len(r.amp.steps) if r.amp else 0,
                "final_loss": summ["amp_final"],
                "failed_checks": [c.name for c in r.checks if not c.ok and not c.inconclusive],
                "inconclusive_checks": [c.name for c in r.checks if c.inconclusive],
            }
        )
    merged = rank_results[0]
    findings = {}
    for r in rank_results:
        for f in r.findings:
            findings.setdefault(finding_key(f), f)
    if merged.amp is not None:
        merged.amp.findings = sort_findings(list(findings.values()))
    merged.exit_code = worst([r.exit_code for r in rank_results])
    # the reason is that of a rank with the winning verdict, not rank 0's own (it may have another)
    merged.message = next((r.message for r in rank_results if r.exit_code == merged.exit_code and r.message), "")
    if merged.exit_code == EXIT_ERROR and not merged.message:
        merged.message = "a rank could not run"
    merged.ranks = ranks
    return merged


def _launch(cmd: list[str], timeout: float) -> int | None:
    """torchrun's exit status, or None when it ran past ``timeout``. However it ends, torchrun,
    its ranks (each in a session of its own) and whatever they spawned are ended with it."""
    proc = subprocess.Popen(cmd, start_new_session=True)
    try:
        return proc.wait(timeout=timeout or None)
    except subprocess.TimeoutExpired:
        return None
    finally:
        if proc.returncode is None:  # timeout, Ctrl-C, SIGTERM: rank groups are found through torchrun
            end_process_tree(proc.pid)
            proc.wait()
        else:  # torchrun has ended its ranks; a reaped pid is not looked up again
            end_groups([proc.pid])


def _worker(argv: list[str]) -> int:
    """One rank, inside torchrun: run once and write rank<RANK>.json."""
    parser = argparse.ArgumentParser(prog="amplint.runtime.ddp")
    parser.add_argument("--mode", choices=["amp", "fp32"], required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--checkpoints")
    parser.add_argument("--script")
    parser.add_argument("--module")
    parser.add_argument("--eval")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    args = ns.args[1:] if ns.args[:1] == ["--"] else ns.args

    import amplint.runtime.write_guard as write_guard
    from .precision import PrecisionPlan
    from .progress import Progress
    from .runner import run_once

    become_group_leader()  # torchrun's ranks already are; ending this group must not reach torchrun
    rank = int(os.environ.get("RANK", "0"))
    remap = ns.device == "cpu"
    plan = PrecisionPlan(remap, remap, None if ns.dtype == "auto" else ns.dtype, ns.mode == "fp32")
    bar = Progress(f"{ns.mode}", ns.steps, ns.progress and rank == 0)
    try:
        outcome = run_once(
            Target(script=ns.script, module=ns.module, args=tuple(args)),
            mode=ns.mode, plan=plan, device=ns.device, steps=ns.steps, seed=ns.seed, on_step=bar,
            checkpoint_root=os.path.join(ns.checkpoints, f"rank{rank}") if ns.checkpoints else None,
            verify_dir=ns.out, evaluate=ns.eval,
        )
    finally:
        bar.close()
        # torchrun only SIGTERMs a finished rank's group: a process that ignores it would stay
        end_groups([os.getpgrp()], exclude_self=True)
    write_guard.keep_refusing()  # this rank only reports now, then exits
    with open(os.path.join(ns.out, f"rank{rank}.json"), "w", encoding="utf-8") as fh:
        json.dump(outcome.to_wire(), fh, default=str)
    return 0


if __name__ == "__main__":
    code = _worker(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # a non-daemon thread the script started must not keep the rank alive
