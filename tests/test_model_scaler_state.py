"""The GradScaler's per-optimizer state as the protocol run answers it: what ``update()`` resets,
what a rebound optimizer or an exclusive branch changes, what the next pass meets."""

from __future__ import annotations

from textwrap import dedent

import amplint.scaler_protocol as P
from amplint.amp import EventKind, FileFacts


def _facts(code: str) -> FileFacts:
    return FileFacts.from_source(dedent(code), "train.py")


def _unscales(facts: FileFacts):
    return [e for e in facts.timeline.events if e.kind is EventKind.UNSCALE]


LOOP = """\
    import torch
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        scaler.scale(loss_fn(model(x), y)).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.unscale_(optimizer)
        scaler.step(optimizer)
        scaler.update()
        scaler.unscale_(optimizer)
"""


def _stages(facts: FileFacts, event, optimizer="optimizer"):
    return {state[optimizer].stage for _, state in facts.protocol.states_before(event) if optimizer in state}


def test_unscale_is_in_force_until_update():
    facts = _facts(LOOP)
    first, second, after_update = _unscales(facts)
    assert _stages(facts, first) == {P.Stage.READY}
    assert _stages(facts, second) == {P.Stage.UNSCALED}
    [found] = facts.protocol.misuses_at(second)
    assert found.misuse is P.UNSCALED_TWICE and found.before.stage_by is first
    # the update between resets the stage: no "twice" any more, but the gradients are the ones
    # the first unscale_ made true, and unscaling them again divides them by the scale once more
    assert _stages(facts, after_update) == {P.Stage.READY}
    [again] = facts.protocol.misuses_at(after_update)
    assert again.misuse is P.NEVER_SCALED and again.before.grads_by is first
    assert facts.protocol.misuses_at(first) == []


def test_exclusive_branches_and_optimizer_loops_do_not_count():
    facts = _facts("""\
        import torch
        scaler = torch.amp.GradScaler("cuda")
        if clip_mode == "norm":
            scaler.unscale_(optimizer)
        else:
            scaler.unscale_(optimizer)
        for opt in optimizers:
            scaler.unscale_(opt)
        for opt in optimizers:
            scaler.unscale_(opt)
    """)
    norm, value, each, again = _unscales(facts)
    assert _stages(facts, value) == {P.Stage.READY}  # the other arm's unscale_ is not on its path
    # each loop rebinds ``opt``: a pass handles another optimizer, whose state is not known
    assert _stages(facts, each, "opt") == {None}
    assert _stages(facts, again, "opt") == {None}
    for event in (norm, value, each, again):
        assert facts.protocol.misuses_at(event) == []
        assert facts.protocol.misuses_at(event, across_iterations=True) == []


def test_update_between_two_optimizers_leaves_the_second_one_stale():
    facts = _facts("""\
        import torch
        scaler = torch.amp.GradScaler("cuda")
        for x in loader:
            scaler.scale(loss(x)).backward()
            scaler.step(opt_a)
            scaler.update()
            scaler.step(opt_b)
    """)
    step_a, step_b = [e for e in facts.timeline.events if e.kind is EventKind.SCALER_STEP]
    [(_, state)] = facts.protocol.states_before(step_b)
    assert state["opt_b"].grads is P.Grads.STALE and state["opt_a"].stage is P.Stage.READY
    [found] = facts.protocol.misuses_at(step_b)
    assert found.misuse is P.RESCALED and found.before.stage_by.kind is EventKind.UPDATE


def test_unscale_skipped_by_a_guard_meets_the_next_pass():
    facts = _facts("""\
        import torch
        scaler = torch.amp.GradScaler("cuda")
        for x in loader:
            scaler.scale(loss(x)).backward()
            scaler.unscale_(optimizer)
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if norm > 100.0:
                optimizer.zero_grad()
                continue
            scaler.step(optimizer)
            scaler.update()
    """)
    (unscale,) = _unscales(facts)
    assert facts.protocol.misuses_at(unscale) == []
    [found] = facts.protocol.misuses_at(unscale, across_iterations=True)
    assert found.misuse is P.UNSCALED_TWICE and found.before.stage_by is unscale


def test_update_with_a_new_scale_needs_no_step():
    facts = _facts("""\
        import torch
        scaler = torch.amp.GradScaler("cuda")
        for x in loader:
            scaler.scale(loss(x)).backward()
            scaler.update(1024.0)
            scaler.update()
    """)
    explicit, plain = [e for e in facts.timeline.events if e.kind is EventKind.UPDATE]
    assert facts.protocol.misuses_at(explicit) == []
    [found] = facts.protocol.misuses_at(plain)
    assert found.misuse is P.UPDATED_WITHOUT_STEP


def test_disabled_scaler():
    facts = _facts("""\
        import torch
        scaler = torch.amp.GradScaler("cuda", enabled=False)
        amp_scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    """)
    assert facts.scaling.is_disabled_scaler("scaler")
    assert not facts.scaling.is_disabled_scaler("amp_scaler")
    assert not facts.scaling.is_disabled_scaler("unknown")
    assert not facts.scaling.is_disabled_scaler(None)
