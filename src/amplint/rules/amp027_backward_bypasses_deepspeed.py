from __future__ import annotations

from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.amp.events import EventKind
from amplint.amp.deepspeed_configs import deepspeed_initializations, deepspeed_precision
from amplint.fix import NoFix
from amplint.model import FixSafety
from amplint.rules.base import Rule, Violation
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

    ## Why is this bad?
    With fp16, DeepSpeed scales the loss itself: `engine.backward(loss)` divides it by the
    gradient accumulation steps and multiplies it by the loss scale (deepspeed 0.19.8
    `runtime/engine.py:3413-3418`), and the step divides the gradients by that scale again
    (`runtime/fp16/fused_optimizer.py:374-385`). A plain `loss.backward()` skips both the scale and
    the accumulation division; DeepSpeed 0.19.8 checks for it in its backward hook and raises
    `RuntimeError: Loss scaling is required for this configuration, but backward() was called
    directly without scaling the loss` (`engine.py:3205-3211`) at the first backward, on the GPU
    machine the job was queued for; at ZeRO stage 0, where that hook is not installed, the
    backward prologue raises `RuntimeError: Direct calls to tensor.backward() are not supported
    in this configuration` (`engine.py:3129-3133`).

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
      and the loss scale at 3413-3418), the check of a direct backward 3205-3211 (ZeRO) and
      3129-3133 (ZeRO stage 0), `scale` 3338 (`engine.scale(loss).backward()`);
      `deepspeed/__init__.py:604-610` (what `initialize` returns), 516-517 and 534-535 (`config_params`,
      a config path read as JSON); `deepspeed/runtime/fp16/fused_optimizer.py:374-385` (the step's
      unscale)
    """

    code = "AMP027"
    name = "backward-bypasses-deepspeed"
    summary = "`loss.backward()` on a DeepSpeed engine whose config enables fp16, instead of `engine.backward(loss)`"
    fix_safety = FixSafety.NONE
    triggers = ("deepspeed",)
    requires = ("backward",)
    # Every finding's config spells "fp16" in the file or is read from a ``.json`` literal path.
    requires_match = r"""fp16|\.json["']"""

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
                    f"`{engine}.backward(loss)`, and a plain `.backward()` skips the scale (DeepSpeed refuses it with a "
                    "`RuntimeError` at the first backward); use "
                    f"`{engine}.backward(loss)` and `{engine}.step()`"
                ), fix=NoFix("engine.backward also divides by the accumulation steps: change the loop by hand"))

    @staticmethod
    def _scaled_by(call, engine: str) -> bool:
        """``engine.scale(loss).backward()``: DeepSpeed's manual backward."""
        inner = call.func.value
        return isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and inner.func.attr.value == "scale" \
            and S.dotted(inner.func.value) == engine
