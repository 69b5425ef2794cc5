"""Runtime truth for AMP023: FSDP on two CPU processes (gloo), one overflow in rank 0's shard.

With a plain ``torch.amp.GradScaler`` only rank 0 sees the inf: it skips its step and halves its
scale while rank 1 steps and keeps its scale, so the ranks scale their next losses differently.
With ``ShardedGradScaler`` the inf flag is all-reduced in ``unscale_`` (torch
``distributed/fsdp/sharded_grad_scaler.py``) and both ranks back off together. amplint reports
the first script and not the second.
"""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from amplint.api import lint_source

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow

SCRIPT = """\
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def run(rank, port, queue):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    torch.manual_seed(0)
    model = FSDP(torch.nn.Linear(4, 4), device_id=torch.device("cpu"))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    scaler.scale(model(torch.ones(2, 4)).sum()).backward()
    if rank == 0:  # an overflow in this rank's shard only
        for p in model.parameters():
            if p.grad is not None and p.grad.numel():
                p.grad.view(-1)[0] = float("inf")
    scaler.step(optimizer)
    scaler.update()
    queue.put((rank, scaler.get_scale()))
    dist.destroy_process_group()


if __name__ == "__main__":
    context = mp.get_context("spawn")
    queue = context.Queue()
    workers = [context.Process(target=run, args=(rank, int(sys.argv[1]), queue)) for rank in range(2)]
    for worker in workers:
        worker.start()
    scales = sorted(queue.get(timeout=120) for _ in workers)
    for worker in workers:
        worker.join(60)
    print(" ".join(str(scale) for _, scale in scales))
"""
SHARDED = SCRIPT.replace(
    'scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)',
    'scaler = ShardedGradScaler("cpu", init_scale=1024.0)',
).replace(
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n",
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
    "from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler\n",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _scales(source: str, tmp_path) -> list[float]:
    script = tmp_path / "fsdp_step.py"
    script.write_text(source, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script), str(_free_port())], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    return [float(word) for word in done.stdout.split()]


def test_plain_scaler_lets_the_ranks_scales_drift_apart(tmp_path):
    assert [f.code for f in lint_source(SCRIPT, settings={"select": ["AMP023"]})] == ["AMP023"]
    assert _scales(SCRIPT, tmp_path) == [512.0, 1024.0]


def test_sharded_scaler_backs_off_on_every_rank(tmp_path):
    assert lint_source(SHARDED, settings={"select": ["AMP023"]}) == []
    assert _scales(SHARDED, tmp_path) == [512.0, 512.0]
