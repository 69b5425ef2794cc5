"""The GradScaler's per-optimizer state as the model answers it: what ``update()`` resets."""

from __future__ import annotations

from textwrap import dedent

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


def test_still_in_force_until_update():
    facts = _facts(LOOP)
    first, second, after_update = _unscales(facts)
    assert facts.scaling.still_in_force(first, EventKind.UNSCALE) is None
    assert facts.scaling.still_in_force(second, EventKind.UNSCALE) is first
    # the update between resets the state, and a step before it is no longer in force either
    assert facts.scaling.still_in_force(after_update, EventKind.UNSCALE) is None
    assert facts.scaling.still_in_force(after_update, EventKind.SCALER_STEP) is None
    assert facts.scaling.updated_between(first, after_update)
    assert not facts.scaling.updated_between(first, second)


def test_exclusive_branches_and_optimizer_loops_do_not_count():
    facts = _facts("""\
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
    assert facts.scaling.still_in_force(value, EventKind.UNSCALE) is None
    assert facts.scaling.optimizer_rebound_per_pass(each, again)
    assert facts.scaling.still_in_force(again, EventKind.UNSCALE) is None
    assert [u for u in facts.scaling.scaler_updates_on_path(norm)] == []


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
