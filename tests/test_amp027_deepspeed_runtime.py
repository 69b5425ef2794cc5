"""Runtime truth for AMP027 with a DeepSpeed config given as a JSON file of the project.

DeepSpeed is not in the ``frameworks`` extra (its CPU engine builds a communication op with a C++
compiler the first time it starts, minutes on a small machine), so this test runs only where
``deepspeed`` is importable, and only where the CPU runs float16 (DeepSpeed refuses an fp16 config
otherwise: ``runtime/engine.py:2003-2004``, ``accelerator/cpu_accelerator.py:228-233``). Without
it, the rule rests on deepspeed 0.19.8's source, which this test runs:

- the script hands ``deepspeed.initialize`` the path ``"configs/ds_fp16.json"``, which DeepSpeed
  opens from the working directory and reads as (H)JSON (``deepspeed/__init__.py:534-535``,
  ``runtime/tensor_parallel/init_utils.py:22-24``);
- with ZeRO stage 1 and fp16 the engine's optimizer needs the loss scale, and a plain
  ``loss.backward()`` raises ``RuntimeError: Loss scaling is required for this configuration, but
  backward() was called directly without scaling the loss`` in the backward hook
  (``runtime/engine.py:3205-3211``);
- with ZeRO stage 0 the backward prologue raises ``RuntimeError: Direct calls to tensor.backward()
  are not supported in this configuration`` (``runtime/engine.py:3129-3133``);
- ``engine.backward(loss)`` / ``engine.step()``, the rule's "use instead", train.

With ``"torch_autocast"`` in float16 and no ZeRO (which needs no float16 support from the CPU:
the model stays float32), the engine builds a ``torch.amp.GradScaler`` of its own
(``runtime/engine.py:666-672``), scales the loss with it in ``engine.backward``
(``engine.py:3419-3420``) and steps it only in ``engine.step()`` (``engine.py:3512-3514``);
``deepspeed.initialize`` returns the plain optimizer (``deepspeed/__init__.py:604-610``). The
test runs both: ``optimizer.step()`` leaves non-finite or scale-sized weights, ``engine.step()``
trains. Where DeepSpeed is not installed, ``test_what_the_engine_does_under_torch_autocast``
replays the engine's part with torch alone (a GradScaler's ``scale(loss).backward()`` then the
plain optimizer's ``step()``): evidence of the same arithmetic, not of DeepSpeed itself.

Run it locally with a scratch install, e.g. ``pip install --no-deps --target /tmp/dslib
deepspeed==0.19.8 hjson py-cpuinfo msgpack einops ninja`` and ``PYTHONPATH=/tmp/dslib:src``.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from amplint.jobs import Job, run_jobs
from amplint.settings import Settings

torch = pytest.importorskip("torch")
needs_deepspeed = pytest.mark.skipif(
    importlib.util.find_spec("deepspeed") is None, reason="deepspeed is not installed (not in the frameworks extra)"
)

pytestmark = pytest.mark.slow

TRAIN = '''\
import os

import deepspeed
import torch

os.environ.update(DS_ACCELERATOR="cpu", MASTER_ADDR="127.0.0.1", RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")


def main():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config="configs/ds_fp16.json")
    for _ in range(3):
        x, y = torch.randn(4, 8).half(), torch.randint(0, 2, (4,))
        loss = torch.nn.functional.cross_entropy(engine(x).float(), y)
        BACKWARD
        engine.step()
    print("trained", flush=True)


if __name__ == "__main__":
    main()
    # The interpreter's own exit can abort in torch's teardown ("terminate called without an
    # active exception"): the work is done and printed, leave now.
    os._exit(0)
'''


def _fp16_on_cpu() -> bool:
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_fp16_supported())
    except Exception:  # noqa: BLE001 - an older torch: no fp16 on this CPU for DeepSpeed
        return False


def _free_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


def _project(tmp_path: Path, stage: int, backward: str) -> Path:
    root = tmp_path / f"stage{stage}"
    (root / "configs").mkdir(parents=True)
    config = {
        "train_micro_batch_size_per_gpu": 4,
        "optimizer": {"type": "Adam", "params": {"lr": 1e-3, "torch_adam": True}},
        "fp16": {"enabled": True, "initial_scale_power": 8},
        "zero_optimization": {"stage": stage},
    }
    (root / "configs" / "ds_fp16.json").write_text(json.dumps(config))
    (root / "train.py").write_text(TRAIN.replace("BACKWARD", backward))
    return root


def _run(root: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, MASTER_PORT=_free_port(), PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, "train.py"], cwd=root, env=env, capture_output=True, text=True, timeout=900)


def _findings(root: Path) -> list[tuple[str, int]]:
    settings = Settings(select=("AMP027",), root=str(root))
    (result,) = run_jobs([Job(str(root / "train.py"), settings, display="train.py")], 1)
    return [(f.code, f.location.row) for f in result.findings]


@needs_deepspeed
@pytest.mark.skipif(not _fp16_on_cpu(), reason="this CPU does not run float16: DeepSpeed refuses an fp16 config")
@pytest.mark.parametrize("stage, error", [
    (1, "Loss scaling is required for this configuration"),
    (0, "Direct calls to tensor.backward() are not supported"),
])
def test_a_plain_backward_on_an_fp16_json_config_raises_and_the_engine_s_backward_trains(tmp_path, stage, error):
    bad = _project(tmp_path / "bad", stage, "loss.backward()")
    row = TRAIN.splitlines().index("        BACKWARD") + 1
    assert _findings(bad) == [("AMP027", row)]
    ran = _run(bad)
    assert ran.returncode != 0 and error in ran.stderr, ran.stderr[-2000:]

    fixed = _project(tmp_path / "fixed", stage, "engine.backward(loss)")
    assert _findings(fixed) == []
    ran = _run(fixed)
    assert ran.returncode == 0 and "trained" in ran.stdout, ran.stderr[-2000:]


AUTOCAST_TRAIN = '''\
import os

import deepspeed
import torch

os.environ.update(DS_ACCELERATOR="cpu", MASTER_ADDR="127.0.0.1", RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")


def main():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=sgd, config="configs/ds_autocast.json")
    start = [p.detach().clone() for p in model.parameters()]
    for _ in range(3):
        x, y = torch.randn(4, 8), torch.randint(0, 2, (4,))
        engine.backward(torch.nn.functional.cross_entropy(engine(x).float(), y))
        STEP
    moved = max((p.detach() - s).abs().max().item() for p, s in zip(model.parameters(), start))
    print("moved", moved, flush=True)


if __name__ == "__main__":
    main()
    # The interpreter's own exit can abort in torch's teardown ("terminate called without an
    # active exception"): the work is done and printed, leave now.
    os._exit(0)
'''


def _autocast_project(tmp_path: Path, step: str) -> Path:
    (tmp_path / "configs").mkdir(parents=True)
    config = {"train_micro_batch_size_per_gpu": 4, "torch_autocast": {"enabled": True, "dtype": "torch.float16"}}
    (tmp_path / "configs" / "ds_autocast.json").write_text(json.dumps(config))
    (tmp_path / "train.py").write_text(AUTOCAST_TRAIN.replace("STEP", step))
    return tmp_path


def _moved(ran: subprocess.CompletedProcess) -> float:
    assert ran.returncode == 0, ran.stderr[-2000:]
    return float(ran.stdout.split("moved ")[-1].split()[0])


@needs_deepspeed
def test_optimizer_step_under_float16_torch_autocast_applies_scaled_gradients(tmp_path):
    bad = _autocast_project(tmp_path / "bad", "optimizer.step()\n        optimizer.zero_grad()")
    row = AUTOCAST_TRAIN.splitlines().index("        STEP") + 1
    assert _findings(bad) == [("AMP027", row)]
    moved = _moved(_run(bad))
    assert not math.isfinite(moved) or moved > 100, moved  # gradients still times 65536

    fixed = _autocast_project(tmp_path / "fixed", "engine.step()")
    assert _findings(fixed) == []
    moved = _moved(_run(fixed))
    assert math.isfinite(moved) and 0 < moved < 1, moved


def test_what_the_engine_does_under_torch_autocast():
    """Torch alone, replaying DeepSpeed 0.19.8's float16 ``"torch_autocast"`` engine without ZeRO
    (evidence of the arithmetic where DeepSpeed is not installed, not a run of DeepSpeed): the
    loss scaled by a default GradScaler as ``engine.backward`` does (``engine.py:3419-3420``),
    then the plain optimizer's ``step()`` against the scaler's own ``step``/``update``
    (``engine.py:3512-3514``)."""

    def run(engine_step: bool) -> torch.Tensor:
        torch.manual_seed(0)
        model = torch.nn.Linear(8, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cpu")  # as engine.py:672 builds it: init_scale 65536
        x, y = torch.randn(4, 8), torch.randint(0, 2, (4,))
        with torch.autocast("cpu", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(model(x).float(), y)
        scaler.scale(loss).backward()
        if engine_step:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        return model.weight.detach().clone()

    torch.manual_seed(0)
    start = torch.nn.Linear(8, 2).weight.detach()
    by_engine, by_optimizer = (run(True) - start).abs().max(), (run(False) - start).abs().max()
    assert 0 < by_engine < 1
    assert not torch.isfinite(by_optimizer) or by_optimizer / by_engine > 1000
