"""amplint's GradScaler protocol (``amplint.scaler_protocol``) against a real GradScaler.

Every transition the table says raises is driven on CPU (``GradScaler("cpu")`` with real fp32
gradients) and must raise exactly that; every transition it says is fine must not raise. The
rules quote these messages and verify's checks decide with this table, so a torch release that
changes the machine fails here first.
"""

from __future__ import annotations

import pytest
import torch

from amplint.scaler_protocol import (
    ERRORS, UNSCALE_FP16, Call, Grads, Misuse, Stage, State, transitions, update_misuse,
)

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow


def _setup():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    # growth_interval=1: every clean update() changes the scale, as one in 2000 does by default
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=1)
    return model, optimizer, scaler


def _do(call: Call, model, optimizer, scaler) -> None:
    if call is Call.SCALED_BACKWARD:
        scaler.scale(model(torch.randn(2, 4)).sum()).backward()
    elif call is Call.PLAIN_BACKWARD:
        model(torch.randn(2, 4)).sum().backward()
    elif call is Call.ZERO_GRAD:
        optimizer.zero_grad(set_to_none=False)  # Grads.NONE: zeroed (None gradients: see below)
    elif call is Call.UNSCALE:
        scaler.unscale_(optimizer)
    elif call is Call.CLIP:
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    elif call is Call.SCALER_STEP:
        scaler.step(optimizer)
    elif call is Call.OPTIMIZER_STEP:
        optimizer.step()
    elif call is Call.UPDATE:
        scaler.update()


# Calls that bring a scaler and optimizer to each stage, and then the gradients to each content.
# READY starts after a whole cycle: a scaler that never scaled anything has no scale yet and
# raises its own "_scale is None" error.
_TO_STAGE = {
    Stage.READY: [Call.SCALED_BACKWARD, Call.SCALER_STEP, Call.UPDATE, Call.ZERO_GRAD],
    Stage.UNSCALED: [Call.SCALED_BACKWARD, Call.UNSCALE, Call.ZERO_GRAD],
    Stage.STEPPED: [Call.SCALED_BACKWARD, Call.SCALER_STEP, Call.ZERO_GRAD],
}
_TO_GRADS = {
    Grads.NONE: [],
    Grads.SCALED: [Call.SCALED_BACKWARD],
    Grads.TRUE: [Call.PLAIN_BACKWARD],
    Grads.STALE: [],  # built in _reach
    Grads.MIXED: [Call.SCALED_BACKWARD, Call.PLAIN_BACKWARD],
}


def _reach(state: State):
    model, optimizer, scaler = _setup()
    if state.grads is Grads.STALE:
        # Another optimizer of the same scaler steps and update() runs while these gradients
        # still carry the old scale.
        other = torch.nn.Linear(4, 1)
        other_optimizer = torch.optim.SGD(other.parameters(), lr=0.1)
        _do(Call.SCALED_BACKWARD, model, optimizer, scaler)
        _do(Call.SCALED_BACKWARD, other, other_optimizer, scaler)
        scaler.step(other_optimizer)
        scaler.update()
        return model, optimizer, scaler
    for call in _TO_STAGE[state.stage] + _TO_GRADS[state.grads]:
        _do(call, model, optimizer, scaler)
    return model, optimizer, scaler


@pytest.mark.parametrize("state, call, found", transitions(), ids=lambda v: getattr(v, "name", None) or str(v))
def test_each_transition_behaves_as_the_table_says(state, call, found):
    model, optimizer, scaler = _reach(state)
    if isinstance(found, Misuse) and found.raises is not None:
        kind, _, message = found.raises.partition(": ")
        with pytest.raises({"RuntimeError": RuntimeError, "AssertionError": AssertionError, "ValueError": ValueError}[kind]) as raised:
            _do(call, model, optimizer, scaler)
        assert str(raised.value) == message
        return
    _do(call, model, optimizer, scaler)  # runs (a silent misuse is silent: that is its harm)
    if isinstance(found, State):
        # The stage the table names is the one torch now records for the optimizer.
        recorded = scaler._per_optimizer_states[id(optimizer)]["stage"].name
        assert recorded == found.stage.name


def test_step_with_every_gradient_none_raises_its_own_error():
    """``zero_grad()``'s default sets the gradients to None; a ``scaler.step`` before any backward
    then finds nothing to check. The static side cannot tell zeroed from None, so the table
    models zeroed gradients and this error stays outside it."""
    model, optimizer, scaler = _reach(State(Stage.READY, Grads.NONE))
    optimizer.zero_grad()
    with pytest.raises(AssertionError, match="No inf checks were recorded for this optimizer"):
        scaler.step(optimizer)


def test_step_on_gradients_never_scaled_divides_them_by_the_scale():
    """The AMP008 misuse raises nothing: the step is made with gradients divided by the scale."""
    model, optimizer, scaler = _reach(State(Stage.READY, Grads.NONE))
    _do(Call.PLAIN_BACKWARD, model, optimizer, scaler)
    true_grad = model.weight.grad.clone()
    scaler.unscale_(optimizer)
    assert torch.allclose(model.weight.grad * scaler.get_scale(), true_grad)


def test_stale_gradients_are_unscaled_by_the_new_scale():
    """The RESCALED misuse raises nothing: the second optimizer's step divides gradients made
    with the old scale by the scale update() just set."""
    model, optimizer, scaler = _reach(State(Stage.READY, Grads.STALE))
    old_scale = 1024.0
    assert scaler.get_scale() != old_scale  # update() changed it (it grows after growth_interval clean steps, backs off on inf)
    scaled = model.weight.grad.clone()
    scaler.unscale_(optimizer)
    assert torch.allclose(model.weight.grad * scaler.get_scale(), scaled)
    assert not torch.allclose(model.weight.grad * old_scale, scaled)


@pytest.mark.parametrize("stages, raises", [
    ((Stage.READY,), True), ((Stage.READY, Stage.READY), True), ((Stage.READY, Stage.STEPPED), False),
    ((Stage.UNSCALED,), False), ((Stage.STEPPED,), False),
])
def test_update_needs_one_optimizer_unscaled_or_stepped(stages, raises):
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    pairs = []
    for stage in stages:
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        pairs.append((model, optimizer))
        if stage is not Stage.READY:
            for call in _TO_STAGE[stage][:-1]:
                _do(call, model, optimizer, scaler)
    if not any(stage is not Stage.READY for stage in stages):
        model, optimizer = pairs[0]
        _do(Call.SCALED_BACKWARD, model, optimizer, scaler)  # a scale exists; still nothing recorded
    misuse = update_misuse(stages)
    assert (misuse is not None) == raises
    if raises:
        with pytest.raises(AssertionError) as raised:
            scaler.update()
        assert f"AssertionError: {raised.value}" == misuse.raises
    else:
        scaler.update()


def test_unscaling_fp16_gradients_raises_the_quoted_error():
    model = torch.nn.Linear(4, 1).half()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    scaler.scale(model(torch.randn(2, 4).half()).float().sum()).backward()
    with pytest.raises(ValueError) as raised:
        scaler.unscale_(optimizer)
    assert f"ValueError: {raised.value}" == UNSCALE_FP16


def test_every_quoted_error_is_in_torch_s_source():
    import inspect

    import torch.amp.grad_scaler as grad_scaler

    source = " ".join(inspect.getsource(grad_scaler).split())
    for error in ERRORS:
        assert error.partition(": ")[2] in source, error
