"""AMP027 and DeepSpeed's own loss scaling, checked on the linter's side only.

DeepSpeed does not run here: it is not in the frameworks extra, and its fp16 engine needs an
accelerator. What the rule rests on is DeepSpeed 0.19.8's source: ``engine.backward(loss)``
divides by the accumulation steps and applies the loss scale (``deepspeed/runtime/engine.py``
3413-3418); a direct ``loss.backward()`` under an fp16 config raises ``RuntimeError: Loss scaling
is required for this configuration, but backward() was called directly without scaling the
loss`` (``engine.py:3205-3211``); ``engine.scale(loss).backward()`` is the supported manual
backward (``engine.py:3338``). So the manual backward must not read as a GradScaler to the other
rules either.

Under ``"torch_autocast"`` in float16 without ZeRO the engine scales the loss with a GradScaler
of its own that only ``engine.step()`` steps (``engine.py:666-672``, ``3419-3420``,
``3512-3514``): there ``optimizer.step()`` after ``engine.backward(loss)`` is reported;
tests/test_amp027_deepspeed_runtime.py runs it (with DeepSpeed where it is installed).
"""

from __future__ import annotations

from textwrap import dedent

from amplint.api import lint_source

ALL = {"select": ["ALL"]}

PLAIN = dedent("""\
    import deepspeed

    def train(model, loader):
        config = {"train_batch_size": 8, "fp16": {"enabled": True}}
        engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
        for x in loader:
            loss = engine(x).mean()
            loss.backward()
            optimizer.step()
""")


def _codes(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.location.row) for f in lint_source(source, settings=ALL)]


def test_a_plain_backward_on_an_fp16_engine_is_reported_at_the_backward():
    assert _codes(PLAIN) == [("AMP027", 8)]


def test_deepspeed_s_manual_backward_is_not_a_grad_scaler_to_any_rule():
    manual = PLAIN.replace("loss.backward()\n        optimizer.step()", "engine.scale(loss).backward()\n        engine.step()")
    assert _codes(manual) == []


def test_the_engine_s_backward_and_a_bf16_config_are_silent():
    assert _codes(PLAIN.replace("loss.backward()", "engine.backward(loss)")) == []
    assert _codes(PLAIN.replace('"fp16"', '"bf16"')) == []


def test_a_backward_with_no_step_of_the_engine_after_it_is_silent():
    assert _codes(PLAIN.replace("        optimizer.step()\n", "")) == []


def test_a_real_grad_scaler_beside_an_engine_is_still_a_grad_scaler():
    layered = PLAIN.replace(
        "        for x in loader:", "        scaler = torch.amp.GradScaler('cuda')\n        for x in loader:"
    ).replace("loss.backward()", "scaler.scale(loss).backward()").replace("import deepspeed", "import deepspeed\nimport torch")
    assert "AMP024" in {code for code, _ in _codes(layered)}


AUTOCAST = dedent("""\
    import deepspeed
    import torch

    def train(model, loader, optimizer):
        config = {"train_batch_size": 8, "torch_autocast": {"enabled": True, "dtype": "torch.float16"}}
        engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=config)
        for x in loader:
            engine.backward(engine(x).mean())
            optimizer.step()
""")


def test_optimizer_step_after_the_engine_s_backward_under_float16_torch_autocast_is_reported_at_the_step():
    assert _codes(AUTOCAST) == [("AMP027", 9)]
    assert _codes(AUTOCAST.replace("engine.backward(engine(x).mean())", "engine.scale(engine(x).mean()).backward()")) == [
        ("AMP027", 9)
    ]


def test_optimizer_step_is_silent_under_fp16_zero_bf16_or_the_engine_s_step():
    assert _codes(AUTOCAST.replace('"torch_autocast": {"enabled": True, "dtype": "torch.float16"}', '"fp16": {"enabled": True}')) == []
    assert _codes(AUTOCAST.replace('"train_batch_size": 8', '"zero_optimization": {"stage": 2}')) == []
    assert _codes(AUTOCAST.replace('"torch.float16"', '"torch.bfloat16"')) == []
    assert _codes(AUTOCAST.replace("optimizer.step()", "engine.step()")) == []


def test_optimizer_step_is_silent_where_the_name_may_hold_another_optimizer():
    rebound = AUTOCAST.replace("        optimizer.step()", "        optimizer = make_optimizer()\n        optimizer.step()")
    assert rebound != AUTOCAST and _codes(rebound) == []
    elsewhere = AUTOCAST.replace("        optimizer.step()\n", "    return engine, optimizer\n\ndef step(optimizer):\n    optimizer.step()\n")
    assert elsewhere != AUTOCAST and _codes(elsewhere) == []
