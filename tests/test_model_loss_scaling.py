"""Who scales the loss when no GradScaler is in sight, and what a backwarded loss was computed under."""

from __future__ import annotations

import textwrap

from amplint.amp import EventKind, FileFacts


def facts(code: str) -> FileFacts:
    return FileFacts.from_source(textwrap.dedent(code))


def test_loss_scaled_by_a_framework_or_a_scaler_handed_in():
    assert facts("from accelerate import Accelerator\n").loss_scaling.loss_scaled_elsewhere
    assert facts("def train(model_engine, loss):\n    model_engine.backward(loss)\n").loss_scaling.loss_scaled_elsewhere
    assert facts("def train(loss, loss_scaler):\n    loss_scaler(loss)\n").loss_scaling.loss_scaled_elsewhere
    assert not facts("def train(loss, opt):\n    loss.backward()\n    opt.step()\n").loss_scaling.loss_scaled_elsewhere


def test_loss_computed_under_an_autocast_block():
    f = facts("""
    import torch

    def train(model, opt, loader, crit):
        for x, y in loader:
            with torch.autocast("cuda"):
                out = model(x)
            loss = crit(out, y)
            loss.backward()
            extra = model.penalty()
            extra.backward()
            opt.step()
    """)
    withs = list(f.with_contexts)
    first, second = (e for e in f.timeline.events if e.kind is EventKind.BACKWARD)
    assert f.loss_scaling.loss_computed_under(first, withs)  # through ``out``, assigned inside the block
    assert not f.loss_scaling.loss_computed_under(second, withs)
