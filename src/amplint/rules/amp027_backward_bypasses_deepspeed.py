from __future__ import annotations

from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.amp.events import EventKind
from amplint.amp.deepspeed_configs import deepspeed_initializations, deepspeed_precision
from amplint.project.configs import FP16, TORCH_AUTOCAST_FP16
from amplint.fix import NoFix
from amplint.model import FixSafety
from amplint.rules.base import Rule, Violation
from amplint.semantic.records import BindingKind
import amplint.semantic.syntax as S


class BackwardBypassesDeepSpeed(Rule):
    """
    ## What it does
    Finds a plain `loss.backward()` in the function that builds a DeepSpeed engine with
    `deepspeed.initialize(..., config=...)` (or `config_params=`) whose config enables `"fp16"`,
    when the engine or the optimizer it returned is stepped after that backward (`engine.step()`,
    `optimizer.step()`). The config is read where the code shows it for certain:

    - a dict literal in the file, or the one dict a name is assigned;
    - a JSON file of the project named by a literal path: `config="configs/ds_fp16.json"`, a name
      assigned such a literal, `json.load(open("ds.json"))`, or `cfg = json.load(f)` inside
      `with open("ds.json") as f:`. The path is looked for as DeepSpeed would be run in practice:
      against the linted file's folder, then each folder up to the project root.

    A backward of a loss the engine scaled (`engine.scale(loss).backward()`) and
    `engine.backward(loss)` are right. Not reported: a `"bf16"` config; a config from the command
    line (`args.deepspeed_config`, `--deepspeed_config`); a JSON file that does not exist, does
    not parse as JSON, holds an `"auto"` value (written for the Hugging Face or Accelerate
    integration) or whose candidate files disagree; a config the code changes before DeepSpeed
    reads it (`cfg["fp16"]["enabled"] = args.fp16`, `cfg.update(...)`, or handed to a function);
    a file linted without its project (standard input, `lint_source`, flake8, the language
    server), where no file is read; and a backward in another function.

    It also finds, where the config turns on DeepSpeed's own `"torch_autocast"` in float16
    without ZeRO (`"zero_optimization"` absent or at stage 0, `"fp16"` and `"bf16"` off):

    - a plain `loss.backward()` as above;
    - `optimizer.step()` on the optimizer `deepspeed.initialize` returned, after a backward the
      engine scaled (`engine.backward(loss)`, `engine.scale(loss).backward()`) in the same
      function.

    The optimizer's `step()` is reported only where the name surely holds what `initialize`
    returned: the function binds it (and the engine's name) only by parameters and assignments,
    and no other assignment can run after the `initialize` call. Not reported: `optimizer.step()`
    under an `"fp16"` config (the returned optimizer is DeepSpeed's fp16 wrapper, whose own
    `step()` checks for overflow, skips and unscales: deepspeed 0.19.8
    `runtime/fp16/fused_optimizer.py:270-275`, `unfused_optimizer.py:205-207`); a
    `"torch_autocast"` config with ZeRO (the ZeRO optimizer's `step()` steps the GradScaler
    itself, `runtime/zero/stage_1_and_2.py:2976-2978`), in bfloat16, or whose `dtype` is not
    written as a float16 string (`"torch.float16"`, `"fp16"`, `"float16"`, `"half"`;
    `runtime/config.py:146`); a config the code changes under `"zero_optimization"` or
    `"torch_autocast"`; any other optimizer; a step in another function than the backward.

    ## Why is this bad?
    With fp16, DeepSpeed scales the loss itself: `engine.backward(loss)` divides it by the
    gradient accumulation steps and, with ZeRO, multiplies it by the loss scale (deepspeed 0.19.8
    `runtime/engine.py:3413-3418`), and the ZeRO optimizer's step divides the gradients by that
    scale again (`runtime/zero/stage_1_and_2.py:3193-3216`). A plain `loss.backward()` skips both
    the scale and the accumulation division; DeepSpeed 0.19.8 checks for it in its backward hook and raises
    `RuntimeError: Loss scaling is required for this configuration, but backward() was called
    directly without scaling the loss` (`engine.py:3198-3211`) at the first backward, on the GPU
    machine the job was queued for; at ZeRO stage 0, where that hook is not installed, the
    backward prologue raises `RuntimeError: Direct calls to tensor.backward() are not supported
    in this configuration` (`engine.py:3129-3133`).

    With `"torch_autocast"` in float16 and no ZeRO, the engine keeps the model in float32, builds
    a `torch.amp.GradScaler` of its own (`engine.py:666-672`), scales the loss with it in
    `engine.backward` (`engine.py:3419-3420`) and `engine.scale` (`3373-3374`), and unscales,
    steps and updates it only in `engine.step()` (`engine.py:3506-3509`, `3512-3514`). The
    optimizer `initialize` returns is the plain one (`engine.optimizer`,
    `deepspeed/__init__.py:604-610`; a float32 model gets no wrapper, `engine.py:2313-2315`,
    `2365-2366`): its own `step()` applies gradients still multiplied by the scale (65536 at
    first) and never skips an overflowing step. With deepspeed 0.19.8 on CPU, a small network's weights were NaN after
    three such steps (`tests/test_amp027_deepspeed_runtime.py`). A plain `loss.backward()` there
    raises the ZeRO stage 0 `RuntimeError` above.

    ## Example
    ```python
    import deepspeed

    config = {"train_batch_size": 32, "fp16": {"enabled": True}}
    engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    for x, y in loader:
        loss = criterion(engine(x), y)
        loss.backward()
        optimizer.step()
    ```

    ```python
    import deepspeed

    config = {"train_batch_size": 32, "torch_autocast": {"enabled": True, "dtype": "torch.float16"}}
    engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1), config=config)
    for x, y in loader:
        engine.backward(criterion(engine(x), y))
        optimizer.step()
        optimizer.zero_grad()
    ```

    ## Use instead
    ```python
    import deepspeed

    config = {"train_batch_size": 32, "fp16": {"enabled": True}}
    engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    for x, y in loader:
        loss = criterion(engine(x), y)
        engine.backward(loss)
        engine.step()
    ```

    and, for the `"torch_autocast"` loop, `engine.step()` in place of `optimizer.step()` and
    `optimizer.zero_grad()` (the engine zeroes the gradients at the accumulation boundary).

    ## Fix safety
    There is no fix: `engine.backward` also divides the loss by the gradient accumulation steps
    of the config, and `engine.step()` also steps the learning-rate scheduler and zeroes the
    gradients at the accumulation boundary, so the loop needs reading when it changes.

    ## References
    - [DeepSpeed: training (engine.backward, engine.step)](https://www.deepspeed.ai/getting-started/#training)
    - [DeepSpeed: config JSON (torch_autocast, zero_optimization)](https://www.deepspeed.ai/docs/config-json/)
    - deepspeed 0.19.8 `deepspeed/runtime/engine.py`: `backward` 3382 (the accumulation division
      and the loss scale at 3413-3420), the check of a direct backward 3198-3211 (ZeRO) and
      3129-3133 (ZeRO stage 0), `scale` 3338 (`engine.scale(loss).backward()`), the
      `"torch_autocast"` GradScaler 666-672 and its step in `_take_model_step` 3505-3514;
      `deepspeed/__init__.py:604-610` (what `initialize` returns), 516-517 and 534-535 (`config_params`,
      a config path read as JSON); `deepspeed/runtime/zero/stage_1_and_2.py:3193-3216` (ZeRO's
      unscale) and 2976-2978 (ZeRO steps the `"torch_autocast"` GradScaler);
      `deepspeed/runtime/fp16/fused_optimizer.py:270-275` (the fp16 wrapper's overflow check)
    """

    code = "AMP027"
    name = "backward-bypasses-deepspeed"
    summary = ("`loss.backward()` on a DeepSpeed engine whose config enables fp16, instead of `engine.backward(loss)`; "
               "`optimizer.step()` instead of `engine.step()` under float16 `torch_autocast` without ZeRO")
    fix_safety = FixSafety.NONE
    triggers = ("deepspeed",)
    requires = ("backward",)
    # Every finding's config spells "fp16", a float16 dtype ("float16", "half") or is read from a
    # ``.json`` literal path.
    requires_match = r"""fp16|float16|half|\.json["']"""

    valid = (
        dedent("""\
        import deepspeed
        config = {"train_batch_size": 8, "fp16": {"enabled": True}}
        engine, optimizer, _, _ = deepspeed.initialize(model=model, config=config)
        for x in loader:
            loss = engine(x).mean()
            engine.backward(loss)
            engine.step()
        """),
        # DeepSpeed's manual backward: the engine scales the loss first.
        dedent("""\
        import deepspeed
        config = {"train_batch_size": 8, "fp16": {"enabled": True}}
        engine, optimizer, _, _ = deepspeed.initialize(model=model, config=config)
        for x in loader:
            loss = engine(x).mean()
            engine.scale(loss).backward()
            engine.step()
        """),
        # bf16 needs no loss scale.
        dedent("""\
        import deepspeed
        engine, optimizer, _, _ = deepspeed.initialize(model=model, config={"bf16": {"enabled": True}})
        for x in loader:
            engine(x).mean().backward()
            optimizer.step()
        """),
        # The config comes from the command line: its precision is not known here.
        dedent("""\
        import deepspeed
        engine, optimizer, _, _ = deepspeed.initialize(model=model, config=args.deepspeed_config)
        for x in loader:
            engine(x).mean().backward()
            engine.step()
        """),
        # With ZeRO the ZeRO optimizer steps the torch_autocast GradScaler itself.
        dedent("""\
        import deepspeed
        config = {"torch_autocast": {"enabled": True, "dtype": "torch.float16"}, "zero_optimization": {"stage": 2}}
        engine, optimizer, _, _ = deepspeed.initialize(model=model, config=config)
        for x in loader:
            engine.backward(engine(x).mean())
            optimizer.step()
        """),
        # Under "fp16" the returned optimizer is DeepSpeed's fp16 wrapper, which unscales itself.
        dedent("""\
        import deepspeed
        config = {"train_batch_size": 8, "fp16": {"enabled": True}}
        engine, optimizer, _, _ = deepspeed.initialize(model=model, config=config)
        for x in loader:
            engine.backward(engine(x).mean())
            optimizer.step()
        """),
        # The engine steps its own GradScaler.
        dedent("""\
        import deepspeed
        config = {"torch_autocast": {"enabled": True, "dtype": "torch.float16"}}
        engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=config)
        for x in loader:
            engine.backward(engine(x).mean())
            engine.step()
        """),
        # bfloat16 torch_autocast builds no GradScaler.
        dedent("""\
        import deepspeed
        config = {"torch_autocast": {"enabled": True, "dtype": "bfloat16"}}
        engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=config)
        for x in loader:
            engine.backward(engine(x).mean())
            optimizer.step()
        """),
    )
    invalid = (
        dedent("""\
        import deepspeed
        import torch

        def train(model, loader):
            config = {"train_batch_size": 8, "fp16": {"enabled": True, "initial_scale_power": 16}}
            engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
            for x, y in loader:
                loss = torch.nn.functional.cross_entropy(engine(x), y)
                loss.backward()
                optimizer.step()
        """),
        dedent("""\
        import deepspeed

        model_engine, _, _, _ = deepspeed.initialize(model=net, config={"fp16": {"enabled": True}})
        for batch in loader:
            model_engine(batch).loss.backward()
            model_engine.step()
        """),
        dedent("""\
        import deepspeed
        import torch

        config = {"train_micro_batch_size_per_gpu": 8, "torch_autocast": {"enabled": True, "dtype": "torch.float16"}}
        engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1), config=config)
        for x in loader:
            engine.backward(engine(x).mean())
            optimizer.step()
            optimizer.zero_grad()
        """),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        backwards = [e for e in facts.timeline.events if e.kind is EventKind.BACKWARD and not S.positional_args(e.call)]
        for site, returned in deepspeed_initializations(facts):
            if len(returned) < 2:
                continue
            precision = deepspeed_precision(facts, site.node, site.ctx)
            if precision in (FP16, TORCH_AUTOCAST_FP16):
                yield from self._plain_backwards(site, returned, backwards, precision)
            if precision == TORCH_AUTOCAST_FP16:
                yield from self._optimizer_steps(site, returned, backwards)

    def _plain_backwards(self, site, returned: tuple[str, ...], backwards, precision: str) -> Iterator[Violation]:
        """A plain ``.backward()`` after the engine is built, followed by a step of it."""
        facts = self.facts
        engine = returned[0]
        steppers = {f"{name}.step" for name in returned[:2] if name and name != "_"}
        steps = [c for c in facts.calls if c.func_text in steppers and c.ctx.scope is site.ctx.scope]
        line = facts.position(site.node).start.line
        enabled = '"fp16" enabled in its config' if precision == FP16 else \
            'float16 `"torch_autocast"` without ZeRO in its config'
        for event in backwards:
            if event.ctx.scope is not site.ctx.scope or event.receiver == engine or self._scaled_by(event.call, engine):
                continue
            if not facts.control_flow.reaches(site.ctx, event.ctx):
                continue
            if not any(facts.control_flow.reaches(event.ctx, step.ctx) for step in steps):
                continue
            yield self.violation(event.call, (
                f"The DeepSpeed engine on line {line} has {enabled}: it scales the loss in "
                f"`{engine}.backward(loss)`, and a plain `.backward()` skips the scale (DeepSpeed refuses it with a "
                "`RuntimeError` at the first backward); use "
                f"`{engine}.backward(loss)` and `{engine}.step()`"
            ), fix=NoFix("engine.backward also divides by the accumulation steps: change the loop by hand"))

    def _optimizer_steps(self, site, returned: tuple[str, ...], backwards) -> Iterator[Violation]:
        """``optimizer.step()`` on the returned optimizer after a backward the engine scaled, where
        the config runs DeepSpeed's float16 ``torch_autocast`` without ZeRO."""
        facts = self.facts
        scope = site.ctx.scope
        engine, optimizer = returned[0], returned[1]
        if not (self._holds_returned(engine, site) and self._holds_returned(optimizer, site)):
            return
        scaled = [c.ctx for c in facts.calls if c.ctx.scope is scope and c.func_text == f"{engine}.backward"]
        scaled += [e.ctx for e in backwards if e.ctx.scope is scope and self._scaled_by(e.call, engine)]
        scaled = [ctx for ctx in scaled if facts.control_flow.reaches(site.ctx, ctx)]
        line = facts.position(site.node).start.line
        for step in facts.calls:
            if step.ctx.scope is not scope or step.func_text != f"{optimizer}.step" or S.positional_args(step.node):
                continue
            if not any(facts.control_flow.reaches(backward, step.ctx) for backward in scaled):
                continue
            yield self.violation(step.node, (
                f'The DeepSpeed engine on line {line} runs `"torch_autocast"` in float16 without ZeRO: '
                f"`{engine}.backward(loss)` (or `{engine}.scale(loss)`) scaled the loss with the engine's own GradScaler, which only "
                f"`{engine}.step()` unscales, checks for overflow and updates; `{optimizer}.step()` applies gradients "
                f"still multiplied by the scale (65536 at first), overflowing ones included; use `{engine}.step()`"
            ), fix=NoFix("engine.step() also steps the scheduler and zeroes the gradients at the accumulation boundary"))

    def _holds_returned(self, name: str, site) -> bool:
        """After the ``deepspeed.initialize`` at ``site``, ``name`` surely holds what it returned:
        the call's scope binds the name only by parameters and assignments, and no assignment
        but the call's own can run after it (in a later iteration included)."""
        facts = self.facts
        scope = site.ctx.scope
        bindings = scope.bindings.get(name, []) if name not in ("", "_") else []
        kinds = {b.kind for b in bindings}
        if not bindings or not kinds <= {BindingKind.ASSIGNMENT, BindingKind.PARAMETER}:
            return False
        assigned = [a for a in facts.assignments_in(scope) if name in a.targets]
        if len(assigned) != sum(b.kind is BindingKind.ASSIGNMENT for b in bindings):
            return False
        return all(
            a.value is site.node or not facts.control_flow.reaches(site.ctx, a.ctx, across_iterations=True)
            for a in assigned
        )

    @staticmethod
    def _scaled_by(call, engine: str) -> bool:
        """``engine.scale(loss).backward()``: DeepSpeed's manual backward."""
        inner = call.func.value
        return isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and inner.func.attr.value == "scale" \
            and S.dotted(inner.func.value) == engine
