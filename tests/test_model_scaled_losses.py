"""Scaled and unscaled losses: a thrown-away ``scaler.scale(loss)``, the step a backward feeds."""

from __future__ import annotations

from textwrap import dedent

import amplint.scaler_protocol as P
from amplint.amp import EventKind, FileFacts


def _facts(code: str) -> FileFacts:
    return FileFacts.from_source(dedent(code), "train.py")


def _of(facts: FileFacts, kind: EventKind):
    return [e for e in facts.timeline.events if e.kind is kind]


def test_discarded_scale_and_the_backward_right_after_it():
    facts = _facts("""\
        scaler = torch.amp.GradScaler("cuda")
        for x in loader:
            loss = model(x).mean()
            scaler.scale((loss))
            loss.backward()
            scaler.step(optimizer)
            scaler.update()
    """)
    (scale,) = _of(facts, EventKind.SCALE)
    (backward,) = _of(facts, EventKind.BACKWARD)
    assert facts.scaling.backward_after_discarded_scale(scale) is backward
    assert facts.scaling.discarded_scale_before(backward)
    assert facts.scaling.tensor_text(scale.call.args[0].value) == "loss"


def test_discarded_scale_apart_from_its_backward():
    facts = _facts("""\
        scaler = torch.amp.GradScaler("cuda")
        scaler.scale(loss)
        log(loss)
        loss.backward()
        scaler.step(optimizer)
    """)
    (scale,) = _of(facts, EventKind.SCALE)
    (backward,) = _of(facts, EventKind.BACKWARD)
    assert facts.scaling.backward_after_discarded_scale(scale) is None
    assert facts.scaling.discarded_scale_before(backward)


def test_a_plain_backward_is_divided_by_the_next_step_until_gradients_are_cleared():
    facts = _facts("""\
        scaler = torch.amp.GradScaler("cuda")
        def step(loss, aux_loss):
            loss.backward()
            scaler.step(optimizer)
            scaler.update()
            aux_loss.backward()
            optimizer.zero_grad()
            scaler.step(optimizer)
    """)
    first, second = _of(facts, EventKind.BACKWARD)
    steps = _of(facts, EventKind.SCALER_STEP)
    [found] = facts.protocol.misuses_at(steps[0])
    assert found.misuse is P.NEVER_SCALED and found.before.grads_by is first
    assert facts.protocol.misuses_at(steps[1]) == []  # zero_grad cleared the second backward's gradients
