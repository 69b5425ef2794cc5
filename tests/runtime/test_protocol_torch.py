"""amplint's GradScaler protocol (``amplint.scaler_protocol``) against a real GradScaler.

Every transition the table says raises is driven on CPU (``GradScaler("cpu")`` with real fp32
gradients) and must raise exactly that; every transition it says is fine must not raise. The
rules quote these messages and verify's checks decide with this table, so a torch release that
changes the machine fails here first.
"""

from __future__ import annotations

import pytest
import torch

from amplint.scaler_protocol import ERRORS, TRANSITIONS, Call, Misuse, Stage, UNSCALE_FP16

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow


def _setup():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    return model, optimizer, scaler


def _do(call: Call, model, optimizer, scaler) -> None:
    if call is Call.SCALED_BACKWARD:
        scaler.scale(model(torch.randn(2, 4)).sum()).backward()
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


# The calls that bring a scaler and optimizer to each stage. READY is after a whole cycle: a
# scaler that never scaled anything has no scale yet and raises its own "_scale is None" error.
_TO_STAGE = {
    Stage.READY: [Call.SCALED_BACKWARD, Call.SCALER_STEP, Call.UPDATE],
    Stage.SCALED: [Call.SCALED_BACKWARD],
    Stage.UNSCALED: [Call.SCALED_BACKWARD, Call.UNSCALE],
    Stage.STEPPED: [Call.SCALED_BACKWARD, Call.SCALER_STEP],
}


@pytest.mark.parametrize("stage, call", sorted(TRANSITIONS, key=str), ids=lambda v: v.name)
def test_each_transition_behaves_as_the_table_says(stage, call):
    model, optimizer, scaler = _setup()
    for step in _TO_STAGE[stage]:
        _do(step, model, optimizer, scaler)
    found = TRANSITIONS[stage, call]
    if isinstance(found, Misuse) and found.raises is not None:
        kind, _, message = found.raises.partition(": ")
        with pytest.raises({"RuntimeError": RuntimeError, "AssertionError": AssertionError, "ValueError": ValueError}[kind]) as raised:
            _do(call, model, optimizer, scaler)
        assert str(raised.value) == message
    else:
        _do(call, model, optimizer, scaler)  # runs (a silent misuse is silent: that is its harm)


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
