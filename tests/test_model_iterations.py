"""One training iteration: its events, the optimizers a scaler steps, the update after the steps."""

from __future__ import annotations

import textwrap

from amplint.amp import EventKind, FileFacts

K = EventKind


def facts(code: str) -> FileFacts:
    return FileFacts.from_source(textwrap.dedent(code))


def events(f: FileFacts, kind: EventKind):
    return [e for e in f.timeline.events if e.kind is kind]


GAN = """
import torch

def train(loader, d, g, opt_d, opt_g, opt_e, encoder):
    scaler = torch.amp.GradScaler("cuda")
    opt_d = torch.optim.Adam(d.parameters())
    opt_g = torch.optim.Adam(g.parameters())
    for epoch in range(10):
        for x in loader:
            scaler.scale(d(x)).backward()
            torch.nn.utils.clip_grad_norm_(g.parameters(), 1.0)
            scaler.step(opt_d)
            scaler.step(opt_g)
            scaler.update()
            scaler.scale(g(x)).backward()
            scaler.step(opt_g)
            scaler.update()
"""


def test_iteration_is_one_pass_of_the_batch_loop():
    f = facts(GAN)
    first_step = events(f, K.SCALER_STEP)[0]
    iteration = f.iterations.iteration_of(first_step)
    assert iteration is not None and iteration.loop is not None
    assert f.code(iteration.loop.node.target) == "x"  # not the epoch loop
    assert [e.kind for e in iteration.events] == [
        K.SCALE_BACKWARD, K.CLIP, K.SCALER_STEP, K.SCALER_STEP, K.UPDATE, K.SCALE_BACKWARD, K.SCALER_STEP, K.UPDATE,
    ]
    assert len(iteration.of(K.UPDATE)) == 2
    assert all(f.iterations.same_iteration(first_step, e) for e in iteration.events)


def test_optimizers_a_scaler_steps_until_its_update():
    f = facts(GAN)
    clip = events(f, K.CLIP)[0]
    step = f.iterations.next_scaler_step_in_function(clip)
    assert step is not None and step.optimizer == "opt_d"
    assert f.iterations.stepped_optimizers(step) == ["opt_d", "opt_g"]
    assert f.iterations.optimizers_owning(f.optim.clip_parameter_owner(clip.call), ["opt_d", "opt_g"]) == ["opt_g"]
    assert f.iterations.optimizers_owning(None, ["opt_d"]) == []


def test_cycles_and_updates_after_the_steps():
    f = facts(GAN)
    steps = events(f, K.SCALER_STEP)
    first_update, second_update = events(f, K.UPDATE)
    assert f.iterations.steps_beside(first_update) == steps
    assert f.iterations.backward_between(first_update, steps[2])  # G's backward starts a new cycle
    assert not f.iterations.backward_between(steps[0], steps[1])
    assert f.iterations.update_on_every_path_after(steps[1]) and f.iterations.update_on_every_path_after(steps[2])
    assert f.iterations.events_of(None, K.UPDATE, "scaler") == [first_update, second_update]
    assert f.iterations.events_of(steps[0].ctx.scope, K.UPDATE, "other") == []


def test_no_iteration_outside_a_backward_loop_or_step_function():
    f = facts("""
    def optimizer_step(self, optimizer):
        self.scaler.step(optimizer)
    """)
    assert f.iterations.iteration_of(events(f, K.SCALER_STEP)[0]) is None


def test_update_may_follow_through_helpers_and_callers():
    f = facts("""
    def finish(scaler):
        scaler.update()

    def train_step(model, x, scaler, opt):
        scaler.scale(model(x)).backward()
        scaler.step(opt)

    def train(model, loader, scaler, opt):
        for x in loader:
            train_step(model, x, scaler, opt)
            finish(scaler)

    def lonely_step(model, x, scaler, opt):
        scaler.scale(model(x)).backward()
        scaler.step(opt)
    """)
    step, lonely = events(f, K.SCALER_STEP)
    assert f.iterations.update_may_follow(step, f.iterations.iteration_of(step))  # the caller updates through ``finish``
    iteration = f.iterations.iteration_of(lonely)
    assert iteration is not None and iteration.loop is None
    assert f.iterations.update_may_follow(lonely, iteration)  # nobody calls it and its name is not per-step


def test_may_unscale_between_through_a_same_file_helper():
    f = facts("""
    class Trainer:
        def unscale_all(self):
            self.scaler.unscale_(self.optimizer)

        def step(self, loss):
            self.scaler.scale(loss).backward()
            self.unscale_all()
            clip(self.model.parameters(), 1.0)
            self.scaler.step(self.optimizer)
    """)
    backward = events(f, K.SCALE_BACKWARD)[0]
    step = events(f, K.SCALER_STEP)[0]
    assert f.iterations.may_unscale_between(backward.ctx, step.ctx)
    assert f.iterations.may_unscale_between(None, step.ctx)
    assert not f.iterations.may_unscale_between(step.ctx, step.ctx)


def test_an_update_on_one_branch_only_is_not_on_every_path():
    f = facts("""
    import torch

    def train(loader, model, opt, log_every):
        scaler = torch.amp.GradScaler("cuda")
        for i, x in enumerate(loader):
            scaler.scale(model(x)).backward()
            scaler.step(opt)
            if i % log_every:
                scaler.update()
    """)
    step = events(f, K.SCALER_STEP)[0]
    assert not f.iterations.update_on_every_path_after(step)
