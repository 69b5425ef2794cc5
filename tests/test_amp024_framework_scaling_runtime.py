"""Runtime truth for AMP024 with the real Accelerate and Lightning (the ``frameworks`` extra).

Accelerate on CPU builds no GradScaler for ``"fp16"`` (accelerate 1.16.0 ``accelerator.py:536-538``
builds one only when ``self.device.type != "cpu"``), so the fp16 test gives the Accelerator the
scaler a GPU run builds, as a CPU ``torch.amp.GradScaler`` (as tests/test_amp019_accelerate_runtime.py
does); everything after that is Accelerate's own code: the prepared optimizer's ``step()`` runs
``scaler.step`` (``optimizer.py:169-173``). A manual scaler's ``scaler.step(optimizer)`` calls that
``step()``, and Accelerate's scaler, which scaled nothing, raises.

``"bf16"`` runs on CPU as it is: ``prepare`` wraps the model's forward in ``torch.autocast``
(``accelerator.py:1792-1801``), so a manual autocast around the prepared model changes nothing
inside it. Lightning under automatic optimization runs the backward of the loss ``training_step``
returns (``loops/optimization/automatic.py:240-241``): a manual backward there runs twice.

DeepSpeed is not in the ``frameworks`` extra, so its arm has no runtime test here; the rule cites
deepspeed 0.19.8's ``runtime/engine.py:2080-2088`` (the cast to the configured dtype) and
``3413-3420`` (the loss scaled in ``engine.backward``).
"""

from __future__ import annotations

import pytest

from amplint.api import lint_source

torch = pytest.importorskip("torch")
accelerate = pytest.importorskip("accelerate", reason="the frameworks extra (accelerate) is not installed")
from accelerate.state import AcceleratorState  # noqa: E402
from accelerate_support import fresh_state, run_source  # noqa: E402,F401  (fresh_state: autouse)

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

MANUAL_SCALER = """\
import torch
from accelerate import Accelerator


def run(steps=3):
    torch.manual_seed(0)
    accelerator = Accelerator(mixed_precision="fp16")
    if accelerator.scaler is None:  # a CPU: give it the scaler a GPU run builds
        accelerator.scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
        accelerator.native_amp = True
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer = accelerator.prepare(model, optimizer)
    scaler = torch.amp.GradScaler("cpu", init_scale=256.0)
    x, y = torch.randn(16, 8), torch.randn(16, 1)
    start = model.weight.detach().clone()
    for _ in range(steps):
        loss = torch.nn.functional.mse_loss(model(x).float(), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
    return (model.weight.detach() - start).norm().item()
"""

ACCELERATE_ONLY = MANUAL_SCALER.replace("    scaler = torch.amp.GradScaler(\"cpu\", init_scale=256.0)\n", "").replace(
    "        scaler.scale(loss).backward()\n        scaler.step(optimizer)\n        scaler.update()\n",
    "        accelerator.backward(loss)\n        optimizer.step()\n",
)

SCALED_INTO_BACKWARD = MANUAL_SCALER.replace(
    "        scaler.scale(loss).backward()\n        scaler.step(optimizer)\n        scaler.update()\n",
    "        accelerator.backward(scaler.scale(loss))\n        optimizer.step()\n",
)

BF16_AUTOCAST = """\
import torch
from accelerate import Accelerator


class Probe(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)
        self.seen = []

    def forward(self, x):
        self.seen.append((torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")))
        return self.linear(x)


def run():
    accelerator = Accelerator(mixed_precision="bf16")
    model = Probe()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer = accelerator.prepare(model, optimizer)
    x = torch.randn(2, 4)
    model(x)
    with torch.autocast("cpu", dtype=torch.float16):
        model(x)
    return model.seen
"""


def _run(source: str):
    return run_source(source, '<script>')


def _codes(source: str) -> list[str]:
    return [f.code for f in lint_source(source, settings={"select": ["AMP024"]})]


def test_manual_scaler_on_fp16_accelerator_fails_at_the_first_step():
    assert _codes(MANUAL_SCALER) == ["AMP024"]
    with pytest.raises(AssertionError, match="Attempted step but _scale is None"):
        _run(MANUAL_SCALER)


def test_accelerator_alone_trains():
    assert _codes(ACCELERATE_ONLY) == []
    assert _run(ACCELERATE_ONLY) > 0


def test_scaled_loss_into_accelerator_backward_skips_or_multiplies_the_step():
    """Accelerate scales the already scaled loss again and unscales by its own scale only: with
    a manual scale of 256 the fp16 backward overflows (256 * 1024) and the step is skipped; with
    a scale of 2 the step is taken and moves twice as far as the step on the loss itself."""
    assert _codes(SCALED_INTO_BACKWARD) == ["AMP024"]
    one_step = SCALED_INTO_BACKWARD.replace("def run(steps=3)", "def run(steps=1)")
    reference = _run(ACCELERATE_ONLY.replace("def run(steps=3)", "def run(steps=1)"))
    assert reference > 0
    AcceleratorState._reset_state(True)
    assert _run(one_step) == 0.0
    AcceleratorState._reset_state(True)
    doubled = _run(one_step.replace("init_scale=256.0", "init_scale=2.0"))
    assert doubled == pytest.approx(2.0 * reference, rel=1e-3)


def test_bf16_accelerator_already_autocasts_the_prepared_model():
    assert _codes(BF16_AUTOCAST) == ["AMP024"]
    seen = _run(BF16_AUTOCAST)
    # Without any manual autocast the forward runs under bf16 autocast, and a manual fp16 one
    # around the call does not change what runs inside the model: Accelerate's autocast wins.
    assert seen == [(True, torch.bfloat16), (True, torch.bfloat16)]


LIGHTNING = """\
import lightning as L
import torch


class Module(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 1)
        self.scaler = torch.amp.GradScaler("cpu")

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x).float(), y)
        self.scaler.scale(loss).backward()
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def run():
    data = torch.utils.data.TensorDataset(torch.randn(8, 4), torch.randn(8, 1))
    trainer = L.Trainer(accelerator="cpu", devices=1, precision="bf16-mixed", max_steps=2, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    module = Module()
    start = module.net.weight.detach().clone()
    trainer.fit(module, torch.utils.data.DataLoader(data, batch_size=4))
    return (module.net.weight.detach() - start).norm().item()
"""


def test_manual_backward_in_automatic_lightning_step_runs_twice():
    pytest.importorskip("lightning", reason="the frameworks extra (lightning) is not installed")
    assert _codes(LIGHTNING) == ["AMP024"]
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        _run(LIGHTNING)
    fixed = LIGHTNING.replace("        self.scaler.scale(loss).backward()\n", "")
    assert _codes(fixed) == []
    assert _run(fixed) > 0


LIGHTNING_AUTOCAST = """\
import lightning as L
import torch


class Module(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 1)
        self.seen = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        with torch.autocast("cpu", dtype=torch.float16):
            out = self.net(x)
        self.seen.append(out.dtype)
        return torch.nn.functional.mse_loss(out.float(), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def run():
    data = torch.utils.data.TensorDataset(torch.randn(8, 4), torch.randn(8, 1))
    trainer = L.Trainer(accelerator="cpu", devices=1, precision="bf16-mixed", max_steps=2, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    module = Module()
    trainer.fit(module, torch.utils.data.DataLoader(data, batch_size=4))
    return module.seen, trainer.precision_plugin.scaler
"""


def test_autocast_in_training_step_overrides_the_bf16_trainers_own():
    """Lightning runs ``training_step`` inside the precision plugin's autocast (lightning 2.6.6
    ``strategies/strategy.py:388``, ``plugins/precision/amp.py:114-122``); a float16 autocast
    written inside it wins, and the ``"bf16-mixed"`` plugin holds no GradScaler (``amp.py:53-58``):
    the step runs in float16 with nothing to keep its gradients from underflowing."""
    pytest.importorskip("lightning", reason="the frameworks extra (lightning) is not installed")
    assert _codes(LIGHTNING_AUTOCAST) == ["AMP024"]
    seen, scaler = _run(LIGHTNING_AUTOCAST)
    assert seen == [torch.float16, torch.float16] and scaler is None
    fixed = LIGHTNING_AUTOCAST.replace(
        '        with torch.autocast("cpu", dtype=torch.float16):\n            out = self.net(x)\n',
        "        out = self.net(x)\n",
    )
    assert _codes(fixed) == []
    seen, _ = _run(fixed)
    assert seen == [torch.bfloat16, torch.bfloat16]
