from __future__ import annotations

from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.amp.events import Event, EventKind
from amplint.amp.deepspeed_configs import DEEPSPEED_INITIALIZE, deepspeed_precision
from amplint.amp.frameworks import AcceleratorBuild
from amplint.fix import NoFix
from amplint.model import FixSafety, Severity
from amplint.rules.base import Rule, Violation
import amplint.rules.lightning_layering as lightning_layering
from amplint.semantic.records import Assignment, Context
import amplint.semantic.syntax as S

_SCALES = (EventKind.SCALE, EventKind.SCALE_BACKWARD)
# ``accelerator.prepare(model, optimizer, ...)`` returns the prepared objects in order
# (accelerate 1.16.0 accelerator.py:1375); the single-object spellings wrap one each.
_PREPARING = ("prepare", "prepare_model", "prepare_optimizer")


class GradScalerOnFrameworkScaling(Rule):
    """
    ## What it does
    Finds a manual loss scaling, `scaler.scale(loss)`, or an enabled `torch.autocast`, layered on
    a framework that already runs mixed precision for the same model in the same file:

    - an `accelerate.Accelerator(mixed_precision="fp16")` or `"bf16"` (a literal) whose prepared
      optimizer the manual scaler steps (`scaler.step(optimizer)`), whose prepared model runs
      under the autocast, in the same function (or in methods of one class), or whose
      `backward` is handed a scaled loss (`accelerator.backward(scaler.scale(loss))`);
    - a DeepSpeed engine from `deepspeed.initialize(..., config=...)` whose config enables
      `"fp16"` or `"bf16"`, beside a `scaler.scale(...)` in the same function or class: a dict
      literal in the file (or the one dict a name is assigned), or a JSON file of the project
      named by a literal path (`config="configs/ds_fp16.json"`, `json.load(open("ds.json"))`,
      `json.load(f)` inside `with open("ds.json") as f:`), looked for against the linted file's
      folder and each folder up to the project root;
    - a `scaler.scale(...)` in the `training_step` of a `LightningModule` that keeps automatic
      optimization on (no `self.automatic_optimization = False`) and returns a loss, in a file
      that builds no `Fabric` (Fabric leaves the backward to the script);
    - an enabled `torch.autocast` in the `training_step` of a `LightningModule` that a `Trainer`
      with a literal mixed `precision=` (`"16-mixed"`, `"bf16-mixed"` or a legacy spelling of
      them) fits in the same file.

    The rule is silent when the Accelerator's `mixed_precision` is `"no"`, is not a literal, or
    comes from the launcher; when it runs with `cpu=True` or a DeepSpeed or Megatron-LM plugin;
    when a DeepSpeed config comes from the command line (`args.deepspeed_config`), its JSON file
    does not exist, does not parse, holds an `"auto"` value or its candidate files disagree, or the
    code changes the config before DeepSpeed reads it (no file is read for a file linted without
    its project: standard input, `lint_source`, flake8, the language server); and for a scaler
    built with `enabled=False`.

    ## Why is this bad?
    Each framework does the mixed precision itself. Accelerate with `"fp16"` builds its own
    GradScaler (accelerate 1.16.0 `accelerator.py:536-555`), and with `"fp16"` or `"bf16"`
    wraps the prepared model's `forward` in `torch.autocast` (`accelerator.py:1792-1801`,
    `utils/modeling.py:2066-2067`). A manual `scaler.step(optimizer)` calls the prepared
    optimizer's `step()`, which runs Accelerate's scaler (`optimizer.py:169-173`); that scaler has
    scaled nothing, so on a GPU the first step raises `AssertionError: Attempted step but _scale
    is None`. A loss scaled by hand and handed to `accelerator.backward` is scaled again, and the
    prepared optimizer unscales by Accelerate's scale only: the fp16 gradients overflow sooner
    (Accelerate then skips the step) and the steps taken are multiplied by the manual scale.
    With `"bf16"` there is nothing to scale at all. A manual autocast around the
    prepared model repeats Accelerate's (the model's own autocast wins inside `forward`, and
    outside it the manual one may run the loss in another dtype with no scaler).

    A DeepSpeed engine with `"fp16"` or `"bf16"` enabled casts the model's parameters to that
    dtype (deepspeed 0.19.8 `runtime/engine.py:2080-2088`) and, for fp16, scales the loss in
    `engine.backward` with its own loss scaler (`runtime/engine.py:3413-3420`,
    `runtime/base_optimizer.py:413-424`), skipping overflowing steps itself. A second scale
    multiplies the loss again out of DeepSpeed's sight: the gradients DeepSpeed unscales by its
    own scale still carry the manual one, and its overflow checks see gradients that scale has
    pushed toward the fp16 limit. A `LightningModule` under automatic optimization hands the
    returned loss to Lightning, which runs the backward (`loops/optimization/automatic.py:240-241`)
    through its precision plugin, which with `"16-mixed"` builds its own GradScaler
    (`plugins/precision/amp.py:54`): a manual `scaler.scale(loss).backward()` in `training_step`
    backpropagates twice. The plugin also runs `training_step` inside its own autocast
    (`strategies/strategy.py:388`, `plugins/precision/amp.py:114-122`): an autocast written there
    overrides the Trainer's dtype, and a float16 one under `"bf16-mixed"` runs without any
    GradScaler (the bf16 plugin builds none).

    ## Example
    ```python
    import torch
    from accelerate import Accelerator

    accelerator = Accelerator(mixed_precision="fp16")
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    scaler = torch.amp.GradScaler("cuda")
    for batch in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(**batch).loss
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
    ```

    ## Use instead
    ```python
    from accelerate import Accelerator

    accelerator = Accelerator(mixed_precision="fp16")
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
    ```

    ## Fix safety
    There is no fix: removing the scaler changes the backward, step and update calls together
    (and the checkpointed scaler state), which is the script's author's call.

    ## References
    - [Accelerate: mixed precision](https://huggingface.co/docs/accelerate/concept_guides/low_precision_training)
    - accelerate 1.16.0 `src/accelerate/accelerator.py`: the GradScaler built for fp16 536-555, the
      forward wrapped in autocast 1792-1801; `src/accelerate/optimizer.py:169-173`
      (`scaler.step` + `scaler.update` in the prepared optimizer's `step`)
    - [DeepSpeed: FP16 training options](https://www.deepspeed.ai/docs/config-json/#fp16-training-options)
    - deepspeed 0.19.8 `deepspeed/__init__.py:433-446` (`initialize(..., config=..., config_params=...)`),
      534-535 (a config path read as JSON),
      `deepspeed/runtime/engine.py:2080-2088` (the cast), 3413-3420 (the scaled backward)
    - lightning 2.6.6 `src/lightning/pytorch/plugins/precision/amp.py:54` (the plugin's
      GradScaler), 114-122 (its autocast), `strategies/strategy.py:388` (`training_step` run
      inside it), `loops/optimization/automatic.py:240-241` (Lightning's backward)
    """

    code = "AMP024"
    name = "grad-scaler-on-framework-scaling"
    summary = "a manual `GradScaler`/`scaler.scale` or `torch.autocast` on top of a framework that already does mixed precision"
    severity = Severity.ERROR
    fix_safety = FixSafety.NONE
    triggers = ("Accelerator", "deepspeed", "LightningModule")
    # Every finding is a ``.scale(`` call or an autocast.
    requires_match = r"\.scale\(|autocast"
    focus_tokens = ("prepare", "scale(", "autocast", "initialize", "training_step", ".fit(")

    valid = (
        dedent("""\
        import torch
        from accelerate import Accelerator
        accelerator = Accelerator(mixed_precision="no")
        model, optimizer = accelerator.prepare(model, optimizer)
        scaler = torch.amp.GradScaler("cuda")
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        """),
        # The launcher decides the precision: unknown here.
        dedent("""\
        import torch
        from accelerate import Accelerator
        accelerator = Accelerator()
        model, optimizer = accelerator.prepare(model, optimizer)
        scaler = torch.amp.GradScaler("cuda")
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        """),
        # Manual optimization: the module runs its own backward.
        dedent("""\
        import torch
        import lightning as L

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.automatic_optimization = False
                self.scaler = torch.amp.GradScaler("cuda")

            def training_step(self, batch, batch_idx):
                loss = self.net(batch)
                self.scaler.scale(loss).backward()
        """),
    )
    invalid = (
        dedent("""\
        import torch
        from accelerate import Accelerator
        accelerator = Accelerator(mixed_precision="fp16")
        model, optimizer = accelerator.prepare(model, optimizer)
        scaler = torch.amp.GradScaler("cuda")
        for batch in loader:
            scaler.scale(model(batch)).backward()
            scaler.step(optimizer)
            scaler.update()
        """),
        dedent("""\
        import torch
        from accelerate import Accelerator
        accelerator = Accelerator(mixed_precision="bf16")
        model, optimizer = accelerator.prepare(model, optimizer)
        for batch in loader:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(batch)
            accelerator.backward(loss)
        """),
        dedent("""\
        import torch
        import deepspeed
        ds_config = {"train_batch_size": 8, "fp16": {"enabled": True}}
        engine, optimizer, _, _ = deepspeed.initialize(model=model, config=ds_config)
        scaler = torch.amp.GradScaler("cuda")
        engine.backward(scaler.scale(loss))
        """),
        dedent("""\
        import torch
        import lightning as L

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.scaler = torch.amp.GradScaler("cuda")

            def training_step(self, batch, batch_idx):
                loss = self.net(batch)
                self.scaler.scale(loss).backward()
                return loss
        """),
        dedent("""\
        import torch
        import lightning as L

        class Model(L.LightningModule):
            def training_step(self, batch, batch_idx):
                with torch.autocast("cuda", dtype=torch.float16):
                    return self.net(batch).mean()

        trainer = L.Trainer(precision="bf16-mixed")
        trainer.fit(Model())
        """),
    )

    def check(self) -> Iterator[Violation]:
        seen: set[int] = set()
        for node, message in (*self._accelerate(), *self._deepspeed(), *lightning_layering.findings(self.facts, self._scales())):
            if id(node) in seen:
                continue
            seen.add(id(node))
            yield self.violation(node, message, fix=NoFix("remove the manual scaler or autocast and let the framework scale"))

    # -- shared
    def _together(self, a: Context, b: Context) -> bool:
        """``b`` runs after ``a`` in one function, or both sit in methods of one class."""
        if a.scope is b.scope:
            return self.facts.control_flow.reaches(a, b)
        return a.scope.class_scope is not None and a.scope.class_scope is b.scope.class_scope

    def _scales(self) -> list[Event]:
        """Enabled ``scaler.scale(...)`` calls, in source order."""
        scaling = self.facts.scaling
        return [
            e for e in self.facts.timeline.events
            if e.kind in _SCALES and not scaling.scaler_provably_disabled(e.scaler, e.ctx.scope)
        ]

    # -- Accelerate
    def _accelerate(self) -> Iterator[tuple[cst.CSTNode, str]]:
        facts = self.facts
        prepares = self._mixed_precision_prepares()
        if not prepares:
            return
        scales = self._scales()
        steps = [
            e for e in facts.timeline.events
            if e.kind is EventKind.SCALER_STEP and not facts.scaling.scaler_provably_disabled(e.scaler, e.ctx.scope)
        ]
        for assignment, build, precision in prepares:
            line = facts.position(build.site.node).start.line
            for step in steps:
                if step.optimizer not in assignment.targets or not self._together(assignment.ctx, step.ctx):
                    continue
                if facts.identity.variable(step.optimizer, step.ctx.scope) != facts.identity.variable(step.optimizer, assignment.ctx.scope):
                    continue
                own = [s for s in scales if s.scaler == step.scaler and s.ctx.scope is step.ctx.scope]
                for site in own or [step]:
                    yield site.call, self._accelerate_scaler_message(precision, line, step.optimizer)
            yield from self._accelerate_autocasts(assignment, precision, line)
        yield from self._scaled_into_accelerator_backward(scales)

    def _scaled_into_accelerator_backward(self, scales: list[Event]) -> Iterator[tuple[cst.CSTNode, str]]:
        """``accelerator.backward(scaler.scale(loss))`` on an Accelerator with a literal fp16/bf16."""
        facts = self.facts
        for site, accelerator in facts.frameworks.accelerator_method_calls("backward"):
            builds = facts.frameworks.accelerator_builds_of(accelerator, site.ctx)
            precisions = {b.precisions for b in builds}
            if not builds or len(precisions) != 1 or not all(b.source == "literal" and b.builds_scaler for b in builds):
                continue
            (precision,) = next(iter(precisions))
            if precision not in ("fp16", "bf16"):
                continue
            line = facts.position(builds[0].site.node).start.line
            for scale in scales:
                if any(arg.value is scale.call for arg in site.node.args):
                    yield scale.call, (
                        f'The `Accelerator` on line {line} runs `mixed_precision="{precision}"`: '
                        + ("`accelerator.backward` scales the loss again with its own GradScaler and the prepared "
                           "optimizer unscales only that scale: the fp16 gradients overflow sooner (Accelerate then "
                           "skips the step) and every step taken is multiplied by this scaler's scale"
                           if precision == "fp16" else
                           "bf16 needs no loss scaling, and the prepared optimizer never unscales this one")
                        + f"; pass the loss itself: `{accelerator}.backward(loss)`"
                    )

    def _accelerate_autocasts(self, prepare: Assignment, precision: str, line: int) -> Iterator[tuple[cst.CSTNode, str]]:
        facts = self.facts
        prepared = set(prepare.targets)
        for site in facts.calls:
            if site.func_text not in prepared or not self._together(prepare.ctx, site.ctx):
                continue
            if facts.identity.variable(site.func_text, site.ctx.scope) != facts.identity.variable(site.func_text, prepare.ctx.scope):
                continue
            for region in facts.autocast.enclosing_autocast(site.ctx):
                if region.call is None or not region.resolved or region.conditional or region.enabled is None:
                    continue
                yield region.call, (
                    f'The `Accelerator` on line {line} runs `mixed_precision="{precision}"` and already wraps the prepared '
                    f"`{site.func_text}`'s forward in its own autocast; this autocast repeats it (inside the model "
                    "Accelerate's wins) and may run the code outside the model in another dtype: remove it"
                )

    def _mixed_precision_prepares(self) -> list[tuple[Assignment, AcceleratorBuild, str]]:
        """``... = accelerator.prepare(...)`` of an Accelerator whose precision is one literal fp16/bf16."""
        facts = self.facts
        out = []
        for assignment in facts.assignments:
            value = assignment.value
            if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in _PREPARING):
                continue
            accelerator = S.dotted(value.func.value)
            builds = facts.frameworks.accelerator_builds_of(accelerator, assignment.ctx) if accelerator else []
            precisions = {b.precisions for b in builds}
            if not builds or len(precisions) != 1 or not all(b.source == "literal" and b.builds_scaler for b in builds):
                continue
            (precision,) = next(iter(precisions))
            if precision in ("fp16", "bf16"):
                out.append((assignment, builds[0], precision))
        return out

    def _accelerate_scaler_message(self, precision: str, line: int, optimizer: str) -> str:
        if precision == "fp16":
            why = (
                "Accelerate builds its own GradScaler and the prepared optimizer's `step()` runs it; that scaler scaled "
                "nothing, so on a GPU the first step raises `AssertionError: Attempted step but _scale is None`"
            )
        else:
            why = "bf16 needs no loss scaling and Accelerate already runs the prepared model under bf16 autocast"
        return (
            f'The `Accelerator` on line {line} runs `mixed_precision="{precision}"` and this manual scaler steps its '
            f"prepared `{optimizer}`: {why}; use `accelerator.backward(loss)` and `{optimizer}.step()`"
        )

    # -- DeepSpeed
    def _deepspeed(self) -> Iterator[tuple[cst.CSTNode, str]]:
        facts = self.facts
        engines = []
        for site in facts.call_index.calls_to(DEEPSPEED_INITIALIZE):
            precision = deepspeed_precision(self.facts, site.node, site.ctx)
            if precision in ("fp16", "bf16"):  # not a "torch_autocast" config: the model stays float32
                engines.append((site, precision))
        if not engines:
            return
        for scale in self._scales():
            for site, precision in engines:
                if self._together(site.ctx, scale.ctx):
                    line = facts.position(site.node).start.line
                    if precision == "fp16":
                        why = (
                            "casts the model to float16 and scales the loss itself in `engine.backward` (skipping "
                            "overflowing steps itself); this manual scaler multiplies the loss a second time, out of "
                            "DeepSpeed's sight"
                        )
                    else:
                        why = "casts the model to bfloat16, which needs no loss scale; this manual scaler only adds one"
                    yield scale.call, (
                        f'The DeepSpeed engine on line {line} has `"{precision}"` enabled in its config: DeepSpeed {why}; '
                        "remove it and call `engine.backward(loss)` / `engine.step()`"
                    )
                    break
