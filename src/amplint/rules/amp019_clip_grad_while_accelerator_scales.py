from __future__ import annotations

from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.amp.frameworks import AcceleratorBuild
from amplint.fix import Fix, NoFix
import amplint.fix.edits as E
from amplint.model import FixSafety
from amplint.rules.base import Invalid, Rule, Violation
from amplint.semantic.records import CallSite
import amplint.semantic.syntax as S

# torch.nn.utils.clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None)
# and clip_grad_value_(parameters, clip_value, foreach=None) (torch 2.13) against accelerate 1.16.0's
# Accelerator.clip_grad_norm_(self, parameters, max_norm, norm_type=2) (accelerator.py:2892) and
# Accelerator.clip_grad_value_(self, parameters, clip_value) (accelerator.py:2953): the parameters
# the methods take, by position, and the ones only torch has.
_CLIPS = {
    "torch.nn.utils.clip_grad_norm_": ("clip_grad_norm_", ("parameters", "max_norm", "norm_type"), ("error_if_nonfinite", "foreach")),
    "torch.nn.utils.clip_grad_norm": ("clip_grad_norm_", ("parameters", "max_norm", "norm_type"), ("error_if_nonfinite", "foreach")),
    "torch.nn.utils.clip_grad_value_": ("clip_grad_value_", ("parameters", "clip_value"), ("foreach",)),
}
# What unscales the gradients of an Accelerate GradScaler before a clip: ``accelerator.unscale_gradients()``
# (accelerator.py:2828) or the scaler itself (``accelerator.scaler.unscale_(optimizer)``).
_UNSCALING = ("unscale_gradients", "scaler.unscale_")


class ClipGradWhileAcceleratorScales(Rule):
    """
    ## What it does
    Finds `torch.nn.utils.clip_grad_norm_` / `clip_grad_value_` (any import spelling) after
    `accelerator.backward(loss)` and before `optimizer.step()` in the same function, where
    `accelerator` is an `accelerate.Accelerator` built in this file that may run in fp16 mixed
    precision, with no `accelerator.unscale_gradients()` between the backward and the clip. An
    `accelerator` parameter (`def train_one_epoch(accelerator, ...)`) counts when every call in the
    file passes it an Accelerator built there.

    When the precision is fp16 is decided from the `Accelerator(...)` call:

    - `mixed_precision="fp16"` (or `PrecisionType.FP16`, or a name assigned it): reported.
    - another literal (`"no"`, `"bf16"`, `"fp8"`), `cpu=True`, or a DeepSpeed / Megatron-LM
      plugin: not reported. Accelerate builds its GradScaler only for fp16 off the CPU and
      outside DeepSpeed / Megatron-LM (accelerate `accelerator.py:536-555`).
    - a choice that includes `"fp16"` (`"fp16" if args.fp16 else "no"`), a computed value
      (`mixed_precision=args.mixed_precision`), or no `mixed_precision` at all (Accelerate then
      reads `ACCELERATE_MIXED_PRECISION`, set by `accelerate launch --mixed_precision` and the
      `accelerate config` file, `state.py:887-891`): reported, with a message that says the
      gradients are scaled *when* the precision is fp16.

    The last group is reported on purpose. An Accelerate script is written to run unchanged under
    whatever precision the launcher picks, and `accelerator.clip_grad_norm_` is the right call
    under every one of them (for "no" and "bf16" it is `torch.nn.utils.clip_grad_norm_` after a
    no-op `unscale_gradients`, and under FSDP, XLA and DeepSpeed it does the distributed work the
    torch function does not), so the finding costs nothing to act on and the fp16 run it prevents
    trains with a gradient clipped 65536 times too hard. Where the file pins a precision other
    than fp16 the rule stays silent.

    ## Why is this bad?
    With fp16, `accelerator.backward(loss)` is `self.scaler.scale(loss).backward()`
    (`accelerator.py:2762-2763`): every gradient is multiplied by the loss scale (65536 at the
    start) until the prepared optimizer's `step()` unscales them (`optimizer.py:169-174`). A
    torch clip in between clips the true gradient at `max_norm / scale`, so the optimizer takes
    steps around 1e-5 of the intended size and the loss barely moves, with nothing failing.
    `accelerator.clip_grad_norm_` and `clip_grad_value_` call `self.unscale_gradients()` first
    (`accelerator.py:2950`, `2979`).

    ## Example
    ```python
    import torch
    from accelerate import Accelerator

    accelerator = Accelerator(mixed_precision="fp16")
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        loss = model(**batch).loss
        accelerator.backward(loss)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
    ```

    ## Use instead
    ```python
    import torch
    from accelerate import Accelerator

    accelerator = Accelerator(mixed_precision="fp16")
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        loss = model(**batch).loss
        accelerator.backward(loss)
        accelerator.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
    ```

    ## Fix safety
    The fix rewrites the call to `accelerator.clip_grad_norm_(...)` /
    `accelerator.clip_grad_value_(...)` on the same Accelerator variable, keeping the arguments.
    It is safe when they map exactly: `parameters`, `max_norm`, `norm_type` (or `parameters`,
    `clip_value`), by position or keyword, which is the whole signature of Accelerate's methods
    (`accelerator.py:2892`, `2953`); both return what the torch functions return. It is unsafe
    when it has to drop `foreach=` or `error_if_nonfinite=`, which Accelerate's methods do not
    take, and when the clip runs more often than the step: inside `with
    accelerator.accumulate(model):` without an `if accelerator.sync_gradients:` guard, or under
    no condition while the step has one. There, Accelerate's clip unscales on each micro-batch
    and GradScaler raises on the second `unscale_` before `update()`; guard the clip with
    `accelerator.sync_gradients` as Accelerate's examples do. With `*args` / `**kwargs` there is
    no fix.

    ## References
    - [Accelerate: gradient clipping](https://huggingface.co/docs/accelerate/usage_guides/gradient_accumulation)
    - [Accelerator.clip_grad_norm_](https://huggingface.co/docs/accelerate/package_reference/accelerator#accelerate.Accelerator.clip_grad_norm_)
    - accelerate 1.16.0 `src/accelerate/accelerator.py`: `backward` 2735-2765, `unscale_gradients`
      2828-2860, `clip_grad_norm_` 2892-2951 (`self.unscale_gradients()` at 2950),
      `clip_grad_value_` 2953-2980 (at 2979), the scaler built for fp16 only 534-555;
      `src/accelerate/optimizer.py:169-174` (`scaler.step` + `update` on sync steps)
    - [Automatic Mixed Precision examples: gradient clipping](https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping)
    """

    code = "AMP019"
    name = "clip-grad-while-accelerator-scales"
    summary = "torch gradient clipping between `accelerator.backward` and the step, while fp16 gradients are still scaled"
    fix_safety = FixSafety.SOMETIMES
    fix_withheld = "with `*args`/`**kwargs`"
    triggers = ("Accelerator",)
    requires = ("clip_grad",)

    valid = (
        # bf16 and "no" build no GradScaler.
        dedent("""\
        import torch
        from accelerate import Accelerator
        accelerator = Accelerator(mixed_precision="bf16")
        accelerator.backward(loss)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        """),
        dedent("""\
        import torch
        from accelerate import Accelerator
        accelerator = Accelerator(mixed_precision="fp16", cpu=True)
        accelerator.backward(loss)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        """),
        # Already Accelerate's clip.
        dedent("""\
        from accelerate import Accelerator
        accelerator = Accelerator(mixed_precision="fp16")
        accelerator.backward(loss)
        accelerator.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        """),
        # Unscaled first.
        dedent("""\
        import torch
        from accelerate import Accelerator
        accelerator = Accelerator(mixed_precision="fp16")
        accelerator.backward(loss)
        accelerator.unscale_gradients()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        """),
        # After the step: the gradients were unscaled by it.
        dedent("""\
        import torch
        from accelerate import Accelerator
        accelerator = Accelerator(mixed_precision="fp16")
        accelerator.backward(loss)
        optimizer.step()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        """),
        # No Accelerator built in this file: `accelerator` may be anything.
        dedent("""\
        import torch

        def train_step(accelerator, model, optimizer, loss):
            accelerator.backward(loss)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        """),
        # A plain backward, no accelerator involved.
        dedent("""\
        import torch
        from accelerate import Accelerator
        accelerator = Accelerator(mixed_precision="fp16")
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        """),
    )
    invalid = (
        Invalid(
            dedent("""\
            import torch
            from accelerate import Accelerator
            accelerator = Accelerator(mixed_precision="fp16")
            accelerator.backward(loss)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            """),
            fixed=dedent("""\
            import torch
            from accelerate import Accelerator
            accelerator = Accelerator(mixed_precision="fp16")
            accelerator.backward(loss)
            accelerator.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            """),
        ),
        Invalid(
            dedent("""\
            from accelerate import Accelerator
            from torch.nn.utils import clip_grad_value_ as clip

            class Trainer:
                def __init__(self, args):
                    self.accelerator = Accelerator(mixed_precision=args.mixed_precision)

                def step(self, loss):
                    self.accelerator.backward(loss)
                    clip(self.model.parameters(), 0.5)
                    self.optimizer.step()
            """),
            fixed=dedent("""\
            from accelerate import Accelerator
            from torch.nn.utils import clip_grad_value_ as clip

            class Trainer:
                def __init__(self, args):
                    self.accelerator = Accelerator(mixed_precision=args.mixed_precision)

                def step(self, loss):
                    self.accelerator.backward(loss)
                    self.accelerator.clip_grad_value_(self.model.parameters(), 0.5)
                    self.optimizer.step()
            """),
        ),
        # Every micro-batch inside accumulate(): an unsafe fix (guard it with sync_gradients).
        Invalid(
            dedent("""\
            import torch.nn as nn
            from accelerate import Accelerator
            accelerator = Accelerator(gradient_accumulation_steps=4)
            for batch in loader:
                with accelerator.accumulate(model):
                    accelerator.backward(model(batch).loss)
                    nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
                    optimizer.step()
            """),
            fixed=dedent("""\
            import torch.nn as nn
            from accelerate import Accelerator
            accelerator = Accelerator(gradient_accumulation_steps=4)
            for batch in loader:
                with accelerator.accumulate(model):
                    accelerator.backward(model(batch).loss)
                    accelerator.clip_grad_norm_(model.parameters(), 1.0)
                    optimizer.step()
            """),
            unsafe=True,
        ),
        # A choice that may be fp16; star arguments: reported without a fix.
        dedent("""\
        import torch
        from accelerate import Accelerator
        accelerator = Accelerator(mixed_precision="fp16" if args.fp16 else "no")
        accelerator.backward(loss)
        torch.nn.utils.clip_grad_norm_(*clip_args)
        optimizer.step()
        """),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        backwards = facts.frameworks.accelerator_method_calls("backward")
        if not backwards:
            return
        unscales = [site for method in _UNSCALING for site, _ in facts.frameworks.accelerator_method_calls(method)]
        self._builds: dict[tuple[str, int], list[AcceleratorBuild]] = {}  # per receiver text and function
        for clip in facts.call_index.calls_to(_CLIPS):
            found = self._scaled_by(clip, backwards, unscales)
            if found is None:
                continue
            accelerator, build, step = found
            yield self.violation(clip.node, self._message(clip, accelerator, build), fix=self._fix(clip, accelerator, step))

    # -- deciding
    def _scaled_by(self, clip: CallSite, backwards, unscales) -> tuple[str, AcceleratorBuild, CallSite] | None:
        """The Accelerator whose fp16 backward precedes the clip, its build, and the step after it."""
        facts, flow = self.facts, self.facts.control_flow
        steps = facts.frameworks.optimizer_steps_in(clip.ctx)
        for backward, accelerator in backwards:
            if backward.ctx.scope is not clip.ctx.scope or not flow.reaches(backward.ctx, clip.ctx):
                continue
            key = (accelerator, id(backward.ctx.scope))
            if key not in self._builds:
                self._builds[key] = [b for b in facts.frameworks.accelerator_builds_of(accelerator, backward.ctx) if b.may_be_fp16]
            builds = self._builds[key]
            if not builds:
                continue
            if any(u.ctx.scope is clip.ctx.scope and flow.between(backward.ctx, u.ctx, clip.ctx) for u in unscales):
                continue
            step = next((s for s in steps if flow.between(backward.ctx, clip.ctx, s.ctx)), None)
            if step is not None:
                return accelerator, builds[0], step.site
        return None

    def _message(self, clip: CallSite, accelerator: str, build: AcceleratorBuild) -> str:
        facts = self.facts
        line = facts.position(build.site.node).start.line
        method = _CLIPS[clip.qualname][0]
        tail = (
            "until the optimizer steps, so this clips the true gradient at a tiny fraction of the limit: "
            f"use `{accelerator}.{method}(...)`, which unscales first"
        )
        if build.source == "literal":
            return (
                "Gradients are clipped while still multiplied by the loss scale: "
                f'`mixed_precision="fp16"` (line {line}) makes Accelerate scale them ' + tail
            )
        if build.source == "default":
            when = (
                f"When the `Accelerator` on line {line} runs in fp16 (its precision comes from "
                "`accelerate launch` / the accelerate config)"
            )
        else:
            when = f'When `{facts.code(build.expression)}` (line {line}) is "fp16"' if build.expression is not None \
                else f"When the `Accelerator` on line {line} runs in fp16"
        return f"{when}, these gradients are still multiplied by the loss scale " + tail

    # -- fixing
    def _fix(self, clip: CallSite, accelerator: str, step: CallSite) -> Fix | NoFix:
        call = clip.node
        if S.has_star_args(call):
            return NoFix("the clip's arguments are passed with `*`/`**`: their mapping onto Accelerate's method is unknown")
        method, params, torch_only = _CLIPS[clip.qualname]
        args, dropped = [], []
        positionals = S.positional_args(call)
        for arg in call.args:
            name = arg.keyword.value if arg.keyword is not None else None
            if name is None:
                index = positionals.index(arg)
                if index >= len(params) + len(torch_only):
                    return NoFix("the clip passes more positional arguments than the torch function takes")
                name = params[index] if index < len(params) else torch_only[index - len(params)]
            if name in torch_only:
                dropped.append(name)
            else:
                args.append(arg)
        if args and dropped:
            args[-1] = args[-1].with_changes(comma=call.args[-1].comma)
        new = call.with_changes(func=E.attribute_chain(E.dotted_expression(accelerator), method), args=args)
        message = f"Use `{accelerator}.{method}`"
        unsafe = []
        if dropped:
            unsafe.append("drops " + ", ".join(f"`{name}`" for name in dropped) + ", which Accelerate's method does not take")
        if self._runs_more_often_than_step(clip, step):
            unsafe.append("the clip may run on micro-batches the step skips, where a second unscale raises")
        if unsafe:
            return Fix.unsafe(f"{message} ({'; '.join(unsafe)})", {call: new})
        return Fix.safe(message, {call: new})

    def _runs_more_often_than_step(self, clip: CallSite, step: CallSite) -> bool:
        """Inside ``accelerator.accumulate(...)`` with no ``sync_gradients`` test above the clip, or
        the step under a condition the clip is not under."""
        facts = self.facts
        if not set(step.ctx.branches) <= set(clip.ctx.branches):
            return True
        accumulating = any(
            isinstance(item.item, cst.Call) and S.callee_last_name(item.item) == "accumulate"
            for node in clip.ctx.withs for item in node.items
        )
        guarded = any(
            isinstance(branch.node, cst.If) and "sync_gradients" in facts.code(branch.node.test)
            for branch in clip.ctx.branches
        )
        return accumulating and not guarded
