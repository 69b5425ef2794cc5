from __future__ import annotations

from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.amp.events import EventKind
from amplint.amp.framework_configs import deepspeed_initializations, deepspeed_precision
from amplint.fix import NoFix
from amplint.model import FixSafety
from amplint.rules.base import Rule, Violation
import amplint.semantic.syntax as S


class BackwardBypassesDeepSpeed(Rule):
    """
    ## What it does
    Finds a plain `loss.backward()` in the function that builds a DeepSpeed engine with
    `deepspeed.initialize(..., config=...)` whose config, a dict literal in the file (or the one
    dict a name is assigned), enables `"fp16"`, when the engine or the optimizer it returned is
    stepped after that backward (`engine.step()`, `optimizer.step()`). A backward of a loss the
    engine scaled (`engine.scale(loss).backward()`) and `engine.backward(loss)` are right; a
    `"bf16"` config, a config read from a file or from arguments, and a backward in another
    function are not reported.

    ## Why is this bad?
    With fp16, DeepSpeed scales the loss itself: `engine.backward(loss)` divides it by the
    gradient accumulation steps and multiplies it by the loss scale (deepspeed 0.19.8
    `runtime/engine.py:3413-3418`), and the step divides the gradients by that scale again
    (`runtime/fp16/fused_optimizer.py:374-385`). A plain `loss.backward()` skips both the scale and
    the accumulation division; DeepSpeed 0.19.8 checks for it in its backward hook and raises
    `RuntimeError: Loss scaling is required for this configuration, but backward() was called
    directly without scaling the loss` (`engine.py:3205-3211`) at the first backward, on the GPU
    machine the job was queued for.

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

    ## Fix safety
    There is no fix: `engine.backward` also divides the loss by the gradient accumulation steps
    of the config, and `engine.step()` also steps the learning-rate scheduler and zeroes the
    gradients at the accumulation boundary, so the loop needs reading when it changes.

    ## References
    - [DeepSpeed: training (engine.backward, engine.step)](https://www.deepspeed.ai/getting-started/#training)
    - deepspeed 0.19.8 `deepspeed/runtime/engine.py`: `backward` 3382 (the accumulation division
      and the loss scale at 3413-3418), the check of a direct backward 3205-3211, `scale` 3338
      (`engine.scale(loss).backward()`); `deepspeed/__init__.py:604-610` (what `initialize`
      returns); `deepspeed/runtime/fp16/fused_optimizer.py:374-385` (the step's unscale)
    """

    code = "AMP027"
    name = "backward-bypasses-deepspeed"
    summary = "`loss.backward()` on a DeepSpeed engine whose config enables fp16, instead of `engine.backward(loss)`"
    fix_safety = FixSafety.NONE
    triggers = ("deepspeed",)
    requires = ("backward", "fp16")

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
        # The config comes from a file: its precision is not known here.
        dedent("""\
        import deepspeed
        engine, optimizer, _, _ = deepspeed.initialize(model=model, config=args.deepspeed_config)
        for x in loader:
            engine(x).mean().backward()
            engine.step()
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
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        backwards = [e for e in facts.timeline.events if e.kind is EventKind.BACKWARD and not S.positional_args(e.call)]
        if not backwards:
            return
        for site, returned in deepspeed_initializations(facts):
            if len(returned) < 2 or deepspeed_precision(facts, site.node, site.ctx) != "fp16":
                continue
            engine = returned[0]
            steppers = {f"{name}.step" for name in returned[:2] if name and name != "_"}
            steps = [c for c in facts.calls if c.func_text in steppers and c.ctx.scope is site.ctx.scope]
            line = facts.position(site.node).start.line
            for event in backwards:
                if event.ctx.scope is not site.ctx.scope or event.receiver == engine or self._scaled_by(event.call, engine):
                    continue
                if not facts.control_flow.reaches(site.ctx, event.ctx):
                    continue
                if not any(facts.control_flow.reaches(event.ctx, step.ctx) for step in steps):
                    continue
                yield self.violation(event.call, (
                    f'The DeepSpeed engine on line {line} has "fp16" enabled in its config: it scales the loss in '
                    f"`{engine}.backward(loss)`, and a plain `.backward()` skips the scale (DeepSpeed raises "
                    "`RuntimeError: Loss scaling is required for this configuration` at the first backward); use "
                    f"`{engine}.backward(loss)` and `{engine}.step()`"
                ), fix=NoFix("engine.backward also divides by the accumulation steps: change the loop by hand"))

    @staticmethod
    def _scaled_by(call, engine: str) -> bool:
        """``engine.scale(loss).backward()``: DeepSpeed's manual backward."""
        inner = call.func.value
        return isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and inner.func.attr.value == "scale" \
            and S.dotted(inner.func.value) == engine
