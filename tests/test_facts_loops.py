"""Facts AMP002-AMP004 rely on: scalers, optimizers, autocast regions, loops, ordered events."""

from __future__ import annotations

import textwrap


from amplint.amp import FileFacts


def facts(code: str) -> FileFacts:
    return FileFacts.from_source(textwrap.dedent(code))


def line(f: FileFacts, node) -> int:
    return f.position(node).start.line


SCALERS = """
import torch
from torch.cuda import amp
import torch.distributed.fsdp.sharded_grad_scaler as sgs
GS = torch.amp.GradScaler
module_scaler = torch.GradScaler("cuda")

class Trainer:
    def __init__(self):
        self.scaler = amp.GradScaler(enabled=True)
        self._scaler = sgs.ShardedGradScaler()
        self.aliased = GS("cuda")
        self.off = torch.amp.GradScaler("cuda", enabled=False)

def step(loss, opt, grad_scaler, other):
    module_scaler.step(opt)
    grad_scaler.unscale_(opt)
    other.scale(loss).backward()
"""


def test_scalers_in_every_spelling():
    f = facts(SCALERS)
    for key in ("module_scaler", "self.scaler", "self._scaler", "self.aliased"):
        assert f.scaling.scalers[key].constructions, key
    assert {"grad_scaler", "other"} <= set(f.scaling.scalers)  # parameters used as scalers
    assert f.scaling.scalers["self.off"].provably_disabled
    assert len(f.scaling.scaler_construction_sites) == 5


def test_scaler_disabled_is_judged_per_scope():
    f = facts(
        """
        import torch
        def a():
            scaler = torch.amp.GradScaler("cuda", enabled=False)
            scaler.step(opt)
        def b():
            scaler = torch.amp.GradScaler("cuda")
            scaler.step(opt)
        """
    )
    scopes = {s.name: s for s in f.scopes}
    assert f.scaling.scaler_provably_disabled("scaler", scopes["a"])
    assert not f.scaling.scaler_provably_disabled("scaler", scopes["b"])


def test_optimizers_and_parameter_owners():
    f = facts(
        """
        import torch
        enc_opt = torch.optim.AdamW(model.encoder.parameters(), lr=1e-4)
        sched = torch.optim.lr_scheduler.StepLR(enc_opt, 10)
        scaler = torch.amp.GradScaler("cuda")
        scaler.step(enc_opt)
        sched.step()
        optimizer.zero_grad()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        """
    )
    assert {"enc_opt", "optimizer"} <= f.optim.optimizers
    assert "sched" not in f.optim.optimizers
    assert f.optim.optimizer_parameter_owners("enc_opt") == {"model.encoder"}
    assert not [e for e in f.timeline.events if e.kind == "optimizer_step"]  # an lr_scheduler step is no optimizer step
    clip = next(e for e in f.timeline.events if e.kind == "clip")
    assert f.optim.clip_parameter_owner(clip.call) == "model"


def test_autocast_regions_in_every_spelling():
    f = facts(
        """
        import torch, contextlib
        from contextlib import nullcontext
        from functools import partial
        ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type, dtype=torch.float16)
        amp_autocast = partial(torch.autocast, device_type="cuda", dtype=torch.float16)

        class T:
            @contextlib.contextmanager
            def maybe_autocast(self):
                with torch.autocast("cuda"):
                    yield

            def step(self, loss):
                with ctx:
                    loss.backward()
                with amp_autocast():
                    loss.backward()
                with self.maybe_autocast():
                    loss.backward()
                with torch.no_grad(), torch.cuda.amp.autocast():
                    loss.backward()
                with torch.autocast("cuda", enabled=False):
                    loss.backward()
                with torch.autocast("cuda"):
                    with torch.autocast("cuda", enabled=False):
                        loss.backward()

        @torch.autocast("cuda")
        def decorated(loss):
            loss.backward()
        """
    )
    active = [bool(f.autocast.enclosing_autocast(e.ctx)) for e in f.timeline.events if e.kind == "backward"]
    assert active == [True, True, True, True, False, False, True]


def test_training_loops_and_per_step_functions():
    f = facts(
        """
        import torch
        def train_one_batch(model, batch, opt):
            model(batch).backward()
            opt.step()

        def fit(model, loader, opt, epochs):
            for epoch in range(epochs):
                for batch in loader:
                    train_one_batch(model, batch, opt)
            for x in range(3):
                print(x)

        while True:
            loss.backward()
        """
    )
    lines = sorted(line(f, loop.node) for loop in f.training.training_loops)
    assert lines == [8, 9, 14]
    assert {s.name for s in f.training.per_step_functions} >= {"train_one_batch"}
    inner = next(loop for loop in f.loops if line(f, loop.node) == 9)
    assert f.training.names_bound_in_loop(inner) == {"batch"}
    call = next(site for site in f.calls if site.func_text == "train_one_batch")
    assert line(f, f.training.outermost_training_loop(call.ctx).node) == 8


def test_ordered_events_with_branches():
    f = facts(
        """
        import torch
        def step(model, loss, scaler, optimizer, clip):
            scaler.scale(loss).backward()
            if clip:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            else:
                model.clip_grad_norm_(1.0)
            self.clip_gradients(optimizer, 1.0)
            accelerator.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
        """
    )
    events = [(e.kind, [b.part for b in e.ctx.branches]) for e in f.timeline.events]
    assert events == [
        ("scale_backward", []),
        ("unscale", ["body"]),
        ("clip", ["body"]),
        ("clip", ["orelse"]),
        ("scaler_step", []),
        ("update", []),
    ]
