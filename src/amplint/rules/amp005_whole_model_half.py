from __future__ import annotations

from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.amp.casts import HalfCast
from amplint.fix import Fix, NoFix
import amplint.fix.edits as E
from amplint.model import FixSafety
from amplint.rules.base import Invalid, Rule, Violation
from amplint.semantic import CallSite
import amplint.semantic.syntax as S


class WholeModelHalf(Rule):
    """
    ## What it does
    Finds the model being trained cast to half precision (`model.half()`, `model.bfloat16()`,
    `model.to(torch.float16)`, `model.to(device, torch.half)`) in code that also uses autocast or a
    `GradScaler`, and Hugging Face models loaded with `torch_dtype=torch.float16` and then trained by a
    `Trainer` with `TrainingArguments(fp16=True)`. A module counts as trained when its parameters go
    to an optimizer or it is called, with gradients on, in the training loop. The cast may be
    `.type(torch.HalfTensor)` or `.to(dtype=weight_dtype)` where every assignment of `weight_dtype`
    is a half dtype. Under Accelerate, a literal `Accelerator(mixed_precision="fp16")` built in
    the same function is the AMP in use: the trained model moved to float16 with the frozen ones
    (`unet.to(accelerator.device, dtype=weight_dtype)`, the diffusers-script shape) is reported;
    models that are frozen, adapters (PEFT/LoRA) or a quantized base, a precision from the
    launcher and `"bf16"` are not. A function that casts its model argument in place (`validate(model)` running
    `model.half()`) is reported when the training loop calls it with the trained model and nothing
    casts it back, even under `no_grad` or in an evaluation function.

    ## Why is this bad?
    Mixed precision keeps the parameters (and so their gradients and the optimizer update) in
    float32; autocast runs the eligible ops in float16 by itself. With the whole model cast, the
    gradients are float16 and the first `scaler.step(optimizer)` (or `scaler.unscale_`) raises
    `ValueError: Attempting to unscale FP16 gradients.`; without a scaler, small updates are
    rounded away in float16/bfloat16 parameters and training stalls. Casting inputs
    (`x.half()`), an EMA/teacher copy used under `no_grad`, or the model in an inference/export
    function that training does not call is fine and not reported. A validation that runs
    `model.half()` each epoch leaves the next epoch training a float16 model: its first
    `scaler.step` raises the same `ValueError`, and the float32 weights are gone.

    ## Example
    ```python
    import torch

    model = Net().cuda().half()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Use instead
    ```python
    import torch

    model = Net().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Fix safety
    The fix is unsafe: it removes the cast from the chain (keeping `.to(device)` and the rest),
    or makes `from_pretrained` load in float32 (`torch_dtype=torch.float32`; dropping the argument
    would not do, since from transformers 5 a checkpoint loads in the dtype it was saved in). The
    model then uses float32
    parameters, which is what AMP expects, but it needs twice the parameter memory, and code that
    relied on float16 weights elsewhere (e.g. feeding float16 inputs outside autocast) may need a
    change too. A cast in a function the training loop calls is not fixed: evaluate under
    `torch.autocast`, or cast a copy (`copy.deepcopy(model).half()`).

    ## References
    - [Automatic Mixed Precision package - torch.amp](https://pytorch.org/docs/stable/amp.html)
    - Accelerate 1.16.0: an fp16 `Accelerator` builds a GradScaler (`accelerator.py:536-555`) and
      the prepared optimizer's `step()` unscales through it (`optimizer.py:169-173`)
    - [CUDA Automatic Mixed Precision examples](https://pytorch.org/docs/stable/notes/amp_examples.html)
    - [Automatic Mixed Precision recipe](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    """

    code = "AMP005"
    name = "whole-model-half"
    summary = "The trained model is cast to float16/bfloat16 while AMP is in use"
    fix_safety = FixSafety.UNSAFE
    fix_withheld = "for a cast in a function the training loop calls"
    # Literal substrings for the prefilter: a half model matters only next to AMP: autocast, a scaler, or HF fp16 training.
    triggers = ("autocast", "GradScaler", ".scale(", "fp16=True", "Accelerator")

    valid = (
        # inputs, not the model
        dedent("""\
            import torch
            model = Net().cuda()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.amp.GradScaler('cuda')
            for x, y in loader:
                x = x.half()
                with torch.autocast('cuda'):
                    loss = model(x).sum()
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
        """),
        # pure fp16, no AMP
        dedent("""\
            import torch
            model = Net().cuda().half()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                loss = model(x.half()).sum()
                loss.backward()
                opt.step()
        """),
        # inference/export function
        dedent("""\
            import torch
            scaler = torch.amp.GradScaler('cuda')

            def export(model, path):
                model.half().eval()
                torch.onnx.export(model, torch.randn(1, 3), path)
        """),
        # EMA copy under no_grad
        dedent("""\
            import torch
            model = Net().cuda()
            ema = Net().cuda().half()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.amp.GradScaler('cuda')
            for x in loader:
                with torch.autocast('cuda'):
                    loss = model(x).sum()
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
                with torch.no_grad():
                    ema(x.half())
        """),
    )
    invalid = (
        Invalid(
            dedent("""\
                import torch
                from accelerate import Accelerator

                def main(model, loader):
                    accelerator = Accelerator(mixed_precision="fp16")
                    model.to(accelerator.device, dtype=torch.float16)
                    optimizer = torch.optim.AdamW(model.parameters())
                    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
                    for batch in loader:
                        accelerator.backward(model(batch).mean())
                        optimizer.step()
            """),
            fixed=dedent("""\
                import torch
                from accelerate import Accelerator

                def main(model, loader):
                    accelerator = Accelerator(mixed_precision="fp16")
                    model.to(accelerator.device)
                    optimizer = torch.optim.AdamW(model.parameters())
                    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
                    for batch in loader:
                        accelerator.backward(model(batch).mean())
                        optimizer.step()
            """),
            unsafe=True,
        ),
        Invalid(
            dedent("""\
                import torch
                model = Net().cuda().half()
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                scaler = torch.amp.GradScaler('cuda')
            """),
            fixed=dedent("""\
                import torch
                model = Net().cuda()
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                scaler = torch.amp.GradScaler('cuda')
            """),
            unsafe=True,
        ),
        Invalid(
            dedent("""\
                import torch
                model = Net()
                model.to(device, torch.float16)
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                with torch.autocast('cuda'):
                    loss = model(x).sum()
                loss.backward()
                opt.step()
            """),
            fixed=dedent("""\
                import torch
                model = Net()
                model.to(device)
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                with torch.autocast('cuda'):
                    loss = model(x).sum()
                loss.backward()
                opt.step()
            """),
            unsafe=True,
        ),
        Invalid(
            dedent("""\
                import torch
                model = Net()
                model.half()
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                scaler = torch.amp.GradScaler('cuda')
            """),
            fixed=dedent("""\
                import torch
                model = Net()
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                scaler = torch.amp.GradScaler('cuda')
            """),
            unsafe=True,
        ),
        Invalid(
            dedent("""\
                import torch
                from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
                model = AutoModelForCausalLM.from_pretrained('gpt2', torch_dtype=torch.float16)
                args = TrainingArguments('out', fp16=True)
                Trainer(model=model, args=args).train()
            """),
            fixed=dedent("""\
                import torch
                from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
                model = AutoModelForCausalLM.from_pretrained('gpt2', torch_dtype=torch.float32)
                args = TrainingArguments('out', fp16=True)
                Trainer(model=model, args=args).train()
            """),
            unsafe=True,
        ),
    )

    def check(self) -> Iterator[Violation]:
        yield from self._check_casts()
        yield from self._check_hf()

    def _fp16_accelerator(self, cast: HalfCast):
        """The ``Accelerator(mixed_precision="fp16")`` built in the function of ``cast``: it builds
        a GradScaler, which its prepared optimizer's ``step`` unscales (accelerate 1.16.0
        ``accelerator.py:536-555``, ``optimizer.py:169-173``). Adapters or a quantized model train
        other parameters than the cast ones: then ``None``."""
        facts = self.facts
        if cast.dtype != "float16" or facts.casts.uses_adapters_or_quantization:
            return None
        return next((build for build in facts.frameworks.accelerator_builds
                     if build.builds_scaler and build.source == "literal" and build.precisions == frozenset({"fp16"})
                     and build.site.ctx.scope is cast.ctx.scope), None)

    def _check_casts(self) -> Iterator[Violation]:
        facts = self.facts
        if not facts.casts.half_casts:
            return
        uses_amp = facts.scaling.uses_amp
        for cast in facts.casts.half_casts:
            accelerator = None if uses_amp else self._fp16_accelerator(cast)
            if not uses_amp and accelerator is None:
                continue
            ctx = cast.ctx
            during_training = facts.casts.cast_in_place_during_training(cast)
            if during_training is not None:
                yield self._cast_in_called_function(cast, *during_training)
                continue
            if facts.models.in_no_grad(ctx) or facts.casts.in_inference_function(ctx) or cast.call in facts.casts.casts_undone:
                continue
            keys = [key for key in facts.casts.cast_modules(cast) if facts.casts.is_trained_module(key, ctx)]
            if accelerator is not None:
                keys = [key for key in keys if key not in facts.models.frozen_modules]
            if not keys:
                continue
            if facts.casts.training_after(ctx) is False:
                continue  # cast after training: export / inference tail
            if accelerator is not None:
                if ctx.branches:
                    continue  # cast on one path only: which path trains is not known here
                line = facts.position(accelerator.site.node).start.line
                message = (
                    f"The trained model `{keys[0]}` is cast to float16 (`{self._short(cast)}`) while the Accelerator on "
                    f"line {line} runs in fp16: its GradScaler raises `ValueError: Attempting to unscale FP16 gradients.` "
                    f"at the first `optimizer.step()` (or `accelerator.clip_grad_norm_`). Keep the trained parameters "
                    f"float32; Accelerate's autocast casts per op"
                )
                yield self.violation(cast.call, message, fix=self._fix(cast))
                continue
            if ctx.branches and not facts.scaling.definite_scaler_seen_from(ctx):
                continue  # a half-precision mode next to an optional AMP mode: cannot tell
            problem = (
                "GradScaler raises `ValueError: Attempting to unscale FP16 gradients.` and updates are rounded to float16"
                if cast.dtype == "float16"
                else "its gradients and optimizer updates are rounded to bfloat16"
            )
            message = (
                f"The trained model `{keys[0]}` is cast to {cast.dtype} (`{self._short(cast)}`) while this file uses AMP: "
                f"{problem}. Keep the parameters float32; autocast casts per op"
            )
            yield self.violation(cast.call, message, fix=self._fix(cast))

    def _cast_in_called_function(self, cast: HalfCast, caller: CallSite, model: str) -> Violation:
        facts = self.facts
        function = facts.callgraph.function_of(cast.ctx.scope).node.name.value  # type: ignore[union-attr]
        message = (
            f"`{function}` casts the trained model to {cast.dtype} in place (`{self._short(cast)}`), and the training "
            f"loop calls it with `{model}` on line {facts.position(caller.node).start.line}: training goes on with "
            f"{cast.dtype} parameters and gradients"
            + (" (the next `scaler.step` raises `ValueError: Attempting to unscale FP16 gradients.`)" if cast.dtype == "float16" else "")
            + " and the float32 weights are lost"
        )
        reason = "evaluate under `torch.autocast` instead, or cast a copy (`copy.deepcopy(model).half()`)"
        return self.violation(cast.call, message, fix=NoFix(reason))

    def _short(self, cast: HalfCast) -> str:
        code = self.facts.code
        args = ", ".join(code(a.value) if a.keyword is None else f"{a.keyword.value}={code(a.value)}" for a in cast.call.args)
        return f".{cast.call.func.attr.value}({args})"  # type: ignore[attr-defined]

    def _fix(self, cast: HalfCast) -> Fix:
        """Drop the cast from its chain; a statement that was only the cast goes entirely."""
        call = cast.call
        func = call.func
        assert isinstance(func, cst.Attribute)
        remaining = [a for a in call.args if a not in cast.dtype_args]
        replacement: cst.BaseExpression = func.value
        if remaining:
            replacement = call
            for arg in cast.dtype_args:
                replacement = E.remove_arg(replacement, arg)
        message = f"Remove `{self._short(cast)}` from the chain"
        stmt = cast.ctx.stmt
        if E.single_simple_statement(stmt) and replacement is func.value:
            small = stmt.body[0]  # type: ignore[union-attr]
            base = S.dotted(replacement)
            redundant = base is not None and (
                (isinstance(small, cst.Expr) and small.value is call)
                or (isinstance(small, cst.Assign) and small.value is call and len(small.targets) == 1
                    and S.dotted(small.targets[0].target) == base)
            )
            if redundant:
                return Fix.unsafe(message, {stmt: E.remove_statement(self.facts, stmt)})
        return Fix.unsafe(message, {call: replacement})

    def _check_hf(self) -> Iterator[Violation]:
        facts = self.facts
        if not facts.casts.half_precision_loads or not facts.casts.trains_hf_in_fp16 or facts.casts.uses_adapters_or_quantization:
            return
        for site, dtype_arg in facts.casts.half_precision_loads:
            target = facts.statements.assigned_name(site)
            if target is None or not facts.casts.trained_by_trainer(target, site.ctx):
                continue
            keyword = dtype_arg.keyword.value  # type: ignore[union-attr]
            message = (
                f"The model `{target}` is loaded in float16 (`{keyword}=...`) and trained with "
                "`TrainingArguments(fp16=True)`: the Trainer's GradScaler raises `ValueError: Attempting to unscale FP16 "
                "gradients.`. Load it in float32; fp16=True already runs the forward in float16"
            )
            # Not removed: from transformers 5 a missing dtype loads the checkpoint's own (``"auto"``).
            float32 = E.float32_like(dtype_arg.value)
            fix = (
                Fix.unsafe("Load the model in float32", {dtype_arg.value: float32}) if float32 is not None
                else NoFix("the dtype is a bare imported name; write `torch.float32` in its place")
            )
            yield self.violation(site.node, message, fix=fix)
