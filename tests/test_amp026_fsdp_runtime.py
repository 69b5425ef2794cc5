"""Runtime truth for AMP026: FSDP with ``MixedPrecision(param_dtype=torch.float16)`` on CPU (gloo).

One process is enough: FSDP still runs the forward and backward on float16 copies of the
parameters (it switches to ``NO_SHARD`` for a world of one, which changes no dtype). The loss
is scaled down so that its gradient, 1e-8, is below float16's smallest subnormal (about 6e-8):
without a scaler every gradient flushes to zero and SGD leaves the model as it was; with
``ShardedGradScaler(init_scale=1024)`` the scaled gradient is representable, is unscaled in
float32 and the model trains. amplint reports the first script and not the second.
"""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from amplint.api import lint_source

torch = pytest.importorskip("torch")
# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

SCRIPT = """\
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision


def main(port):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=0, world_size=1)
    torch.manual_seed(0)
    policy = MixedPrecision(param_dtype=torch.float16, reduce_dtype=torch.float16)
    model = FSDP(torch.nn.Linear(4, 4), device_id=torch.device("cpu"), mixed_precision=policy)
    optimizer = torch.optim.SGD(model.parameters(), lr=1000.0)
    before = [p.detach().clone() for p in model.parameters()]
    loss = (model(torch.ones(2, 4)) * 1e-8).sum()
    loss.backward()
    optimizer.step()
    print(sum((p.detach() - b).abs().sum().item() for p, b in zip(model.parameters(), before)))
    dist.destroy_process_group()
    # The interpreter's own exit can abort in torch's teardown ("terminate called without an
    # active exception", about one run in thirty here): the work is done and printed, leave now.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main(int(sys.argv[1]))
"""
SCALED = SCRIPT.replace(
    "    loss.backward()\n    optimizer.step()\n",
    '    scaler = ShardedGradScaler("cpu", init_scale=1024.0)\n'
    "    scaler.scale(loss).backward()\n    scaler.step(optimizer)\n    scaler.update()\n",
).replace(
    "import torch.distributed as dist\n",
    "import torch.distributed as dist\nfrom torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler\n",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _moved(source: str, tmp_path) -> float:
    script = tmp_path / "fsdp_fp16.py"
    script.write_text(source, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script), str(_free_port())], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    return float(done.stdout.split()[-1])


def test_fp16_fsdp_without_scaler_loses_small_gradients(tmp_path):
    assert [f.code for f in lint_source(SCRIPT, settings={"select": ["AMP026"]})] == ["AMP026"]
    assert _moved(SCRIPT, tmp_path) == 0.0


def test_sharded_scaler_keeps_them(tmp_path):
    assert "ShardedGradScaler" in SCALED
    assert lint_source(SCALED, settings={"select": ["AMP026"]}) == []
    assert _moved(SCALED, tmp_path) > 1e-4
