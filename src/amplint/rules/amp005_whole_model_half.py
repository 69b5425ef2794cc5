from __future__ import annotations

import re
from typing import Iterator

import libcst as cst

from amplint.fix import edits as E
from amplint.amp import TRAINING_KINDS
from amplint.semantic import syntax as S
from amplint.semantic import CallSite, Context, Scope
from amplint.fix import Fix
from amplint.model import FixSafety
from amplint.rules.base import Invalid, Rule, Violation

_HALF_DTYPES = {"torch.float16": "float16", "torch.half": "float16", "torch.bfloat16": "bfloat16"}
# Chain links that return the same module: ``Net().to(device).half().train()``.
_MODULE_CHAIN = ("to", "cuda", "cpu", "half", "float", "bfloat16", "train", "eval", "requires_grad_", "xpu", "mps")
# Functions whose name says they do not train: casting there is inference / export.
_INFERENCE_WORDS = frozenset(
    {"eval", "evaluate", "evaluation", "val", "valid", "validate", "validation", "test", "infer", "inference",
     "predict", "prediction", "predictor", "export", "onnx", "trace", "jit", "script", "sample", "sampling", "generate",
     "generation", "benchmark", "bench", "deploy", "serve", "serving", "quantize", "convert", "demo", "visualize",
     "profile", "inferencer"}
)
# Modules that are copies of the trained one, never trained themselves.
_COPY_WORDS = frozenset({"ema", "teacher", "frozen", "ref", "reference", "target", "shadow", "averaged", "swa"})
_HF_TRAINING_ARGS = re.compile(r"(TrainingArguments|^(SFT|DPO|ORPO|KTO|GRPO|Reward|CPO)Config)$")
_PEFT_OR_QUANT = frozenset(
    {"get_peft_model", "prepare_model_for_kbit_training", "prepare_model_for_int8_training", "LoraConfig",
     "BitsAndBytesConfig", "PeftModel", "inject_adapter_in_model"}
)


def _words(name: str) -> set[str]:
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return {w for w in name.lower().split("_") if w}


class WholeModelHalf(Rule):
    """
    ## What it does
    Finds the model being trained cast to half precision (`model.half()`, `model.bfloat16()`,
    `model.to(torch.float16)`, `model.to(device, torch.half)`) in code that also uses autocast or a
    `GradScaler`, and Hugging Face models loaded with `torch_dtype=torch.float16` and then trained by a
    `Trainer` with `TrainingArguments(fp16=True)`. A module counts as trained when its parameters go
    to an optimizer or it is called, with gradients on, in the training loop.

    ## Why is this bad?
    Mixed precision keeps the parameters (and so their gradients and the optimizer update) in
    float32; autocast runs the eligible ops in float16 by itself. With the whole model cast, the
    gradients are float16 and the first `scaler.step(optimizer)` (or `scaler.unscale_`) raises
    `ValueError: Attempting to unscale FP16 gradients.`; without a scaler, small updates are
    rounded away in float16/bfloat16 parameters and training stalls. Casting inputs
    (`x.half()`), an EMA/teacher copy used under `no_grad`, or the model in an inference/export
    function is fine and not reported.

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
    or drops `torch_dtype=torch.float16` from `from_pretrained`. The model then uses float32
    parameters, which is what AMP expects, but it needs twice the parameter memory, and code that
    relied on float16 weights elsewhere (e.g. feeding float16 inputs outside autocast) may need a
    change too.

    ## References
    - [Automatic Mixed Precision package - torch.amp](https://pytorch.org/docs/stable/amp.html)
    - [CUDA Automatic Mixed Precision examples](https://pytorch.org/docs/stable/notes/amp_examples.html)
    - [Automatic Mixed Precision recipe](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    """

    code = "AMP005"
    name = "whole-model-half"
    summary = "The trained model is cast to float16/bfloat16 while AMP is in use"
    fix_safety = FixSafety.UNSAFE
    # Literal substrings for the prefilter: a half model matters only next to AMP: autocast, a scaler, or HF fp16 training.
    triggers = ("autocast", "GradScaler", ".scale(", "fp16=True")

    valid = (
        # inputs, not the model
        "import torch\nmodel = Net().cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "scaler = torch.amp.GradScaler('cuda')\nfor x, y in loader:\n    x = x.half()\n"
        "    with torch.autocast('cuda'):\n        loss = model(x).sum()\n"
        "    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n",
        # pure fp16, no AMP
        "import torch\nmodel = Net().cuda().half()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x, y in loader:\n    loss = model(x.half()).sum()\n    loss.backward()\n    opt.step()\n",
        # inference/export function
        "import torch\nscaler = torch.amp.GradScaler('cuda')\n\ndef export(model, path):\n"
        "    model.half().eval()\n    torch.onnx.export(model, torch.randn(1, 3), path)\n",
        # EMA copy under no_grad
        "import torch\nmodel = Net().cuda()\nema = Net().cuda().half()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "scaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    with torch.autocast('cuda'):\n"
        "        loss = model(x).sum()\n    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n"
        "    with torch.no_grad():\n        ema(x.half())\n",
    )
    invalid = (
        Invalid(
            "import torch\nmodel = Net().cuda().half()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "scaler = torch.amp.GradScaler('cuda')\n",
            fixed="import torch\nmodel = Net().cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "scaler = torch.amp.GradScaler('cuda')\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nmodel = Net()\nmodel.to(device, torch.float16)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "with torch.autocast('cuda'):\n    loss = model(x).sum()\nloss.backward()\nopt.step()\n",
            fixed="import torch\nmodel = Net()\nmodel.to(device)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "with torch.autocast('cuda'):\n    loss = model(x).sum()\nloss.backward()\nopt.step()\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nmodel = Net()\nmodel.half()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "scaler = torch.amp.GradScaler('cuda')\n",
            fixed="import torch\nmodel = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "scaler = torch.amp.GradScaler('cuda')\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nfrom transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
            "model = AutoModelForCausalLM.from_pretrained('gpt2', torch_dtype=torch.float16)\n"
            "args = TrainingArguments('out', fp16=True)\nTrainer(model=model, args=args).train()\n",
            fixed="import torch\nfrom transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
            "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
            "args = TrainingArguments('out', fp16=True)\nTrainer(model=model, args=args).train()\n",
            unsafe=True,
        ),
    )

    # ------------------------------------------------------------------ check
    def check(self) -> Iterator[Violation]:
        yield from self._check_casts()
        yield from self._check_hf()

    def _cast_dtype(self, site: CallSite) -> tuple[str, list[cst.Arg]] | None:
        """(dtype, dtype args) when ``site`` is a half-precision cast of its receiver."""
        func = site.node.func
        if not isinstance(func, cst.Attribute):
            return None
        method = func.attr.value
        if method in ("half", "bfloat16") and not site.node.args:
            return ("float16" if method == "half" else "bfloat16"), []
        if method != "to" or S.has_star_args(site.node):
            return None
        found: list[tuple[str, cst.Arg]] = []
        for index, arg in enumerate(site.node.args):
            if arg.keyword is not None and arg.keyword.value != "dtype":
                continue
            if arg.keyword is None and index > 1:
                continue
            dtype = _HALF_DTYPES.get(self.facts.qualname(arg.value, site.ctx.scope) or "")
            if dtype is not None:
                found.append((dtype, arg))
        if len(found) != 1:
            return None
        return found[0][0], [found[0][1]]

    def _module_keys(self, site: CallSite) -> list[str]:
        """What the cast applies to: the chain's base name and/or the assignment target."""
        keys: list[str] = []
        receiver: cst.BaseExpression = site.node.func.value  # type: ignore[attr-defined]
        while (
            isinstance(receiver, cst.Call)
            and isinstance(receiver.func, cst.Attribute)
            and receiver.func.attr.value in _MODULE_CHAIN
        ):
            receiver = receiver.func.value
        base = S.dotted(receiver)
        if base is not None:
            keys.append(base)
        stmt = site.ctx.stmt
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            small = stmt.body[0]
            if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None and self._is_chain_of(small.value, site.node):
                targets = small.targets if isinstance(small, cst.Assign) else [cst.AssignTarget(small.target)]
                if len(targets) == 1:
                    text = S.dotted(targets[0].target)
                    if text is not None and text not in keys:
                        keys.append(text)
        return keys

    @staticmethod
    def _is_chain_of(value: cst.BaseExpression, call: cst.Call) -> bool:
        """``value`` is ``call`` possibly followed by more module-returning links."""
        node = value
        while True:
            if node is call:
                return True
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _MODULE_CHAIN:
                node = node.func.value
                continue
            return False

    def _compatible(self, key: str, other: Context, cast: Context) -> bool:
        """Does ``key`` at ``other`` name the same module as at ``cast``?"""
        facts = self.facts
        if key.split(".")[0] == "self":
            a, b = facts.function_of(other.scope), facts.function_of(cast.scope)
            return a is not None and b is not None and a.class_name is not None and a.class_name == b.class_name
        if other.scope is cast.scope:
            return True
        head = key.split(".")[0]
        if cast.scope.kind == "module":
            return head not in other.scope.bindings
        if other.scope.kind == "module":
            return head not in cast.scope.bindings
        return False

    @property
    def _direct_training_scopes(self) -> set[Scope]:
        return {
            e.ctx.scope
            for e in self.facts.events
            if e.kind in TRAINING_KINDS
        }

    def _trained(self, key: str, cast: Context) -> bool:
        facts = self.facts
        if set(_words(key.rsplit(".", 1)[-1])) & _COPY_WORDS:
            return False
        for module_key, site in facts.optimized_modules:
            if module_key == key and self._compatible(key, site.ctx, cast):
                return True
        if key in facts.frozen_modules or key == "self":
            return False
        direct = self._direct_training_scopes
        for site in facts.module_calls(key):
            if facts.in_no_grad(site.ctx) or not self._compatible(key, site.ctx, cast):
                continue
            if site.ctx.scope in direct or any(loop in facts.training_loops for loop in site.ctx.loops):
                return True
        for site in facts.calls:
            if site.ctx.scope is not cast.scope or site.ctx.order <= cast.order or facts.in_no_grad(site.ctx):
                continue
            if any(S.dotted(arg.value) == key for arg in site.node.args) and any(
                f.scope in facts.training_functions for f in facts.called_functions(site)
            ):
                return True
        return False

    def _training_after(self, cast: Context) -> bool | None:
        """None: the cast's scope does not train; else whether training follows the cast there."""
        facts = self.facts
        orders = [
            e.order
            for e in facts.events_by_scope.get(cast.scope, [])
            if e.kind in TRAINING_KINDS
        ]
        for site in facts.calls:
            if site.ctx.scope is cast.scope and any(f.scope in facts.training_functions for f in facts.called_functions(site)):
                orders.append(site.ctx.order)
        if not orders:
            return None
        return max(orders) > cast.order

    def _inference_function(self, cast: Context) -> bool:
        scope: Scope | None = cast.scope
        while scope is not None:
            if scope.kind == "function" and _words(scope.name) & _INFERENCE_WORDS:
                return True
            scope = scope.parent
        return False

    def _uses_amp(self) -> bool:
        facts = self.facts
        for info in facts.scalers.values():
            if info.constructions and not info.provably_disabled:
                return True
            if not info.constructions and "scale-backward" in info.evidence:
                return True
        for regions in facts.autocast_regions.values():
            if any(r.resolved and r.maybe_enabled for r in regions):
                return True
        return False

    def _definite_scaler(self, cast: Context) -> bool:
        """An always-enabled GradScaler built unconditionally where the cast can see it."""
        for info in self.facts.scalers.values():
            for site in info.constructions:
                enabled = S.keyword_arg_value(site.node, "enabled")
                if enabled is not None and S.bool_value(enabled) is not True:
                    continue
                if site.ctx.branches:
                    continue
                if not self._compatible(info.key, site.ctx, cast) and site.ctx.scope.kind != "module":
                    continue
                stmt = site.ctx.stmt
                if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Assign) and stmt.body[0].value is not site.node:
                    continue  # ``GradScaler() if amp else None``
                return True
        return False

    def _check_casts(self) -> Iterator[Violation]:
        facts = self.facts
        candidates = []
        for site in facts.calls:
            cast = self._cast_dtype(site)
            if cast is not None:
                candidates.append((site, cast))
        if not candidates or not self._uses_amp():
            return
        # ``model.half().float()``: cast straight back (yolov5 rounds anchors this way).
        cast_back = {
            s.node.func.value
            for s in facts.calls
            if isinstance(s.node.func, cst.Attribute) and s.node.func.attr.value == "float"
            and isinstance(s.node.func.value, cst.Call)
        }
        for site, (dtype, dtype_args) in candidates:
            ctx = site.ctx
            if facts.in_no_grad(ctx) or self._inference_function(ctx) or site.node in cast_back:
                continue
            keys = [k for k in self._module_keys(site) if self._trained(k, ctx)]
            if not keys:
                continue
            if self._training_after(ctx) is False:
                continue  # cast after training: export / inference tail
            if ctx.branches and not self._definite_scaler(ctx):
                continue  # a half-precision mode next to an optional AMP mode: cannot tell
            key = keys[0]
            problem = (
                "GradScaler raises `ValueError: Attempting to unscale FP16 gradients.` and updates are rounded to float16"
                if dtype == "float16"
                else "its gradients and optimizer updates are rounded to bfloat16"
            )
            message = (
                f"The trained model `{key}` is cast to {dtype} (`{self._short(site)}`) while this file uses AMP: "
                f"{problem}. Keep the parameters float32; autocast casts per op"
            )
            yield self.violation(site.node, message, fix=self._fix(site, dtype_args))

    def _short(self, site: CallSite) -> str:
        func = site.node.func
        assert isinstance(func, cst.Attribute)
        args = ", ".join(self.facts.code(a.value) if a.keyword is None else f"{a.keyword.value}={self.facts.code(a.value)}" for a in site.node.args)
        return f".{func.attr.value}({args})"

    # ------------------------------------------------------------------ fix
    def _fix(self, site: CallSite, dtype_args: list[cst.Arg]):
        call = site.node
        func = call.func
        assert isinstance(func, cst.Attribute)
        remaining = [a for a in call.args if a not in dtype_args]
        replacement: cst.BaseExpression
        if not remaining:
            replacement = func.value
        else:
            replacement = call
            for arg in dtype_args:
                replacement = E.remove_arg(replacement, arg)
        message = f"Remove `{self._short(site)}` from the chain"
        stmt = site.ctx.stmt
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and replacement is func.value:
            small = stmt.body[0]
            base = S.dotted(replacement)
            redundant = base is not None and (
                (isinstance(small, cst.Expr) and small.value is call)
                or (
                    isinstance(small, cst.Assign)
                    and small.value is call
                    and len(small.targets) == 1
                    and S.dotted(small.targets[0].target) == base
                )
            )
            if redundant:
                return Fix.unsafe(message, {stmt: self._remove_statement(stmt)})
        return Fix.unsafe(message, {call: replacement})

    def _remove_statement(self, stmt: cst.SimpleStatementLine):
        block = self.facts.statement_block(stmt)
        if block is not None and len(block[1]) > 1:
            return cst.RemovalSentinel.REMOVE
        return stmt.with_changes(body=[cst.Pass()])

    # ------------------------------------------------------------------ Hugging Face
    def _check_hf(self) -> Iterator[Violation]:
        facts = self.facts
        loads = [s for s in facts.calls if (s.func_text or "").endswith(".from_pretrained")]
        if not loads:
            return
        fp16_args = [
            s for s in facts.calls
            if _HF_TRAINING_ARGS.search((s.func_text or "").rsplit(".", 1)[-1])
            and S.bool_value(S.keyword_arg_value(s.node, "fp16")) is True
        ]
        if not fp16_args:
            return
        for s in facts.calls:
            last = (s.func_text or "").rsplit(".", 1)[-1]
            if last in _PEFT_OR_QUANT or (s.func_text or "").startswith("PeftModel."):
                return
        for site in loads:
            if any(S.keyword_arg(site.node, k) is not None for k in ("load_in_8bit", "load_in_4bit", "quantization_config")):
                continue
            dtype_arg = None
            for name in ("torch_dtype", "dtype"):
                arg = S.keyword_arg(site.node, name)
                if arg is not None and (facts.qualname(arg.value, site.ctx.scope) or "") in ("torch.float16", "torch.half"):
                    dtype_arg = arg
            if dtype_arg is None:
                continue
            target = self._assigned_to(site)
            if target is None or not self._trained_by_trainer(target, site.ctx):
                continue
            message = (
                f"The model `{target}` is loaded in float16 (`{dtype_arg.keyword.value}=...`) and trained with "  # type: ignore[union-attr]
                "`TrainingArguments(fp16=True)`: the Trainer's GradScaler raises `ValueError: Attempting to unscale FP16 "
                "gradients.`. Load it in float32; fp16=True already runs the forward in float16"
            )
            fix = Fix.unsafe(f"Remove `{dtype_arg.keyword.value}=` from `from_pretrained`", {site.node: E.remove_arg(site.node, dtype_arg)})  # type: ignore[union-attr]
            yield self.violation(site.node, message, fix=fix)

    def _assigned_to(self, site: CallSite) -> str | None:
        stmt = site.ctx.stmt
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
            assign = stmt.body[0]
            if assign.value is site.node and len(assign.targets) == 1:
                return S.dotted(assign.targets[0].target)
        return None

    def _trained_by_trainer(self, key: str, load: Context) -> bool:
        for site in self.facts.calls:
            if not (site.func_text or "").endswith("Trainer") or not self._compatible(key, site.ctx, load):
                continue
            model = S.argument(site.node, 0, "model")
            if model is not None and S.dotted(model) == key:
                return True
        return False
