"""Half-precision casts of modules, and whether the module cast is the one being trained.

``model.half()``, ``model.bfloat16()``, ``model.to(torch.float16)`` / ``.to(device, torch.half)``
anywhere in a chain of module-returning calls, and Hugging Face models loaded with
``torch_dtype=torch.float16`` (or ``torch.bfloat16``) for a ``Trainer`` that runs fp16 (bf16)
mixed precision.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import libcst as cst

from amplint.amp.events import TRAINING_KINDS
import amplint.semantic.syntax as S
from amplint.semantic.records import CallSite, Context, Scope

HALF_DTYPES = {"torch.float16": "float16", "torch.half": "float16", "torch.bfloat16": "bfloat16"}
# ``module.type(torch.HalfTensor)`` casts every parameter like ``.half()``.
HALF_TENSOR_TYPES = {
    **HALF_DTYPES, "torch.HalfTensor": "float16", "torch.cuda.HalfTensor": "float16",
    "torch.BFloat16Tensor": "bfloat16", "torch.cuda.BFloat16Tensor": "bfloat16",
}
FLOAT_DTYPES = frozenset({"torch.float32", "torch.float", "torch.FloatTensor", "torch.cuda.FloatTensor"})
# Chain links that return the same module: ``Net().to(device).half().train()``.
MODULE_CHAIN = ("to", "cuda", "cpu", "half", "float", "bfloat16", "train", "eval", "requires_grad_", "xpu", "mps")
# Functions whose name says they do not train: casting there is inference / export.
INFERENCE_WORDS = frozenset(
    {"eval", "evaluate", "evaluation", "val", "valid", "validate", "validation", "test", "infer", "inference",
     "predict", "prediction", "predictor", "export", "onnx", "trace", "jit", "script", "sample", "sampling", "generate",
     "generation", "benchmark", "bench", "deploy", "serve", "serving", "quantize", "convert", "demo", "visualize",
     "profile", "inferencer"}
)
# Modules that are copies of the trained one, never trained themselves.
COPY_WORDS = frozenset({"ema", "teacher", "frozen", "ref", "reference", "target", "shadow", "averaged", "swa"})
HF_TRAINING_ARGS = re.compile(r"(TrainingArguments|^(SFT|DPO|ORPO|KTO|GRPO|Reward|CPO)Config)$")
# Adapters and quantized bases train float32 adapters on top of half weights, as intended.
PEFT_OR_QUANT = frozenset(
    {"get_peft_model", "prepare_model_for_kbit_training", "prepare_model_for_int8_training", "LoraConfig",
     "BitsAndBytesConfig", "PeftModel", "inject_adapter_in_model"}
)


def name_words(name: str) -> set[str]:
    """The words of a snake_case or CamelCase name, lower-cased."""
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return {w for w in name.lower().split("_") if w}


def _last(text: str | None) -> str:
    return (text or "").rsplit(".", 1)[-1]


@dataclass(eq=False)
class HalfCast:
    """A call that casts its receiver to half precision."""

    site: CallSite
    dtype: str  # "float16" | "bfloat16"
    dtype_args: list[cst.Arg]  # the arguments naming the dtype (none for ``.half()``)

    @property
    def call(self) -> cst.Call:
        return self.site.node

    @property
    def ctx(self) -> Context:
        return self.site.ctx


class CastFacts:
    """The ``facts.casts`` service of :class:`~amplint.amp.facts.FileFacts`."""

    def __init__(self, facts: "FileFacts") -> None:
        self.facts = facts

    # -- the casts and what they reach
    def _half_cast(self, site: CallSite) -> HalfCast | None:
        func = site.node.func
        if not isinstance(func, cst.Attribute):
            return None
        method = func.attr.value
        if method in ("half", "bfloat16") and not site.node.args:
            return HalfCast(site, "float16" if method == "half" else "bfloat16", [])
        if method == "type" and len(site.node.args) == 1 and site.node.args[0].keyword is None and not S.has_star_args(site.node):
            dtype = HALF_TENSOR_TYPES.get(self.facts.bindings.qualname(site.node.args[0].value, site.ctx.scope) or "")
            return HalfCast(site, dtype, [site.node.args[0]]) if dtype is not None else None
        if method != "to" or S.has_star_args(site.node):
            return None
        found: list[tuple[str, cst.Arg]] = []
        for index, arg in enumerate(site.node.args):
            if arg.keyword is not None and arg.keyword.value != "dtype":
                continue
            if arg.keyword is None and index > 1:
                continue
            dtype = self.half_dtype_of(arg.value, site.ctx.scope)
            if dtype is not None:
                found.append((dtype, arg))
        if len(found) != 1:
            return None
        return HalfCast(site, found[0][0], [found[0][1]])

    def half_dtype_of(self, expr: cst.BaseExpression, scope: Scope) -> str | None:
        """``"float16"``/``"bfloat16"`` for ``torch.half``, or for a variable every assignment of
        which gives a half dtype (``weight_dtype = torch.float16``, then ``torch.bfloat16`` under
        ``if bf16:``; not one that may stay float32). ``"float16"`` when it may be float16."""
        dtype = HALF_DTYPES.get(self.facts.bindings.qualname(expr, scope) or "")
        if dtype is not None or not isinstance(expr, cst.Name):
            return dtype
        dtypes = self.facts.dtypes.dtype_choices(expr, scope)  # amp/dtypes.py: the values a dtype variable may hold
        if not dtypes or not dtypes <= {"float16", "bfloat16"}:
            return None
        return "float16" if "float16" in dtypes else "bfloat16"

    @cached_property
    def half_casts(self) -> list[HalfCast]:
        """Every ``.half()`` / ``.bfloat16()`` / ``.to(<half dtype>)`` call, in source order."""
        return [cast for site in self.facts.calls if (cast := self._half_cast(site)) is not None]

    @cached_property
    def casts_undone(self) -> set[cst.CSTNode]:
        """Calls cast straight back by ``.float()``: ``model.half().float()`` (yolov5 rounds anchors so)."""
        return {
            s.node.func.value
            for s in self.facts.calls
            if isinstance(s.node.func, cst.Attribute) and s.node.func.attr.value == "float"
            and isinstance(s.node.func.value, cst.Call)
        }

    @staticmethod
    def _chain_ends_in(value: cst.BaseExpression, call: cst.Call) -> bool:
        """``value`` is ``call`` possibly followed by more module-returning links."""
        node = value
        while node is not call:
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in MODULE_CHAIN:
                node = node.func.value
                continue
            return False
        return True

    def cast_modules(self, cast: HalfCast) -> list[str]:
        """What the cast applies to: the chain's base name and/or the name the chain is assigned to."""
        keys: list[str] = []
        receiver: cst.BaseExpression = cast.call.func.value  # type: ignore[attr-defined]
        while isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) and receiver.func.attr.value in MODULE_CHAIN:
            receiver = receiver.func.value
        base = S.dotted(receiver)
        if base is not None:
            keys.append(base)
        stmt = cast.ctx.stmt
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            small = stmt.body[0]
            if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None and self._chain_ends_in(small.value, cast.call):
                targets = small.targets if isinstance(small, cst.Assign) else [cst.AssignTarget(small.target)]
                if len(targets) == 1:
                    text = S.dotted(targets[0].target)
                    if text is not None and text not in keys:
                        keys.append(text)
        return keys

    # -- a cast in place inside a function the training loop calls (``validate(model)`` per epoch)
    def cast_back_after(self, key: str, scope: Scope, order: int) -> bool:
        """``key.float()`` / ``key.to(torch.float32)`` runs in ``scope`` after ``order``."""
        for site in self.facts.callgraph.calls_by_scope.get(scope, []):
            if site.ctx.order <= order:
                continue
            if site.func_text == f"{key}.float":
                return True
            if site.func_text in (f"{key}.to", f"{key}.type"):
                if any(self.facts.bindings.qualname(arg.value, scope) in FLOAT_DTYPES for arg in site.node.args):
                    return True
        return False

    def cast_in_place_during_training(self, cast: HalfCast) -> tuple[CallSite, str] | None:
        """The call inside a training loop that runs ``cast`` on the trained model in place, with
        the model's name there: the cast's receiver is a parameter of a same-file function,
        called inside a training loop with the trained module, and neither side casts it back."""
        receiver = cast.call.func.value  # type: ignore[attr-defined]
        function = self.facts.callgraph.function_of(cast.ctx.scope)
        param = receiver.value if isinstance(receiver, cst.Name) else None
        if function is None or param is None or param not in function.params or function.scope is not cast.ctx.scope:
            return None
        if self.cast_back_after(param, cast.ctx.scope, cast.ctx.order):
            return None
        for site in self.facts.callgraph.callers_of(function):
            key = S.dotted(self.facts.callgraph.argument_for(site, function, param))
            if key is None or not self.facts.training.training_loops_within_run(site.ctx) or not self.is_trained_module(key, site.ctx):
                continue
            if not self.cast_back_after(key, site.ctx.scope, site.ctx.order):
                return site, key
        return None

    # -- where training happens
    @cached_property
    def training_event_scopes(self) -> set[Scope]:
        """Scopes that run a backward or an optimizer step themselves."""
        return {e.ctx.scope for e in self.facts.timeline.events if e.kind in TRAINING_KINDS}

    def in_inference_function(self, ctx: Context) -> bool:
        """``ctx`` lies in a function named for evaluation, export or serving (``evaluate``, ``export_onnx``)."""
        scope: Scope | None = ctx.scope
        while scope is not None:
            if scope.kind == "function" and name_words(scope.name) & INFERENCE_WORDS:
                return True
            scope = scope.parent
        return False

    def _passed_to_training_function(self, key: str, cast: Context) -> bool:
        """After ``cast``, its scope hands ``key`` to a same-file function that trains, with grads on."""
        for site in self.facts.calls:
            if site.ctx.scope is not cast.scope or site.ctx.order <= cast.order or self.facts.models.in_no_grad(site.ctx):
                continue
            if any(S.dotted(arg.value) == key for arg in site.node.args) and self.facts.callgraph.calls_into(site, self.facts.training.training_functions):
                return True
        return False

    def is_trained_module(self, key: str, seen_from: Context) -> bool:
        """The module ``key`` (as named at ``seen_from``) is trained: its parameters go to an
        optimizer, or it is called with grads on where training happens, or it is passed to a
        training function. Copies (``ema``, ``teacher``) and frozen modules are not."""
        if name_words(_last(key)) & COPY_WORDS:
            return False
        if any(module == key and self.facts.identity.same_variable(key, site.ctx, seen_from) for module, site in self.facts.optim.optimized_modules):
            return True
        if key in self.facts.models.frozen_modules or key == "self":
            return False
        for site in self.facts.models.module_calls(key):
            if self.facts.models.in_no_grad(site.ctx) or not self.facts.identity.same_variable(key, site.ctx, seen_from):
                continue
            if site.ctx.scope in self.training_event_scopes or any(loop in self.facts.training.training_loops for loop in site.ctx.loops):
                return True
        return self._passed_to_training_function(key, seen_from)

    def training_after(self, ctx: Context) -> bool | None:
        """None when ``ctx``'s scope does not train; else whether training follows ``ctx`` there."""
        orders = [e.order for e in self.facts.timeline.events_by_scope.get(ctx.scope, []) if e.kind in TRAINING_KINDS]
        orders += [
            site.ctx.order for site in self.facts.calls
            if site.ctx.scope is ctx.scope and self.facts.callgraph.calls_into(site, self.facts.training.training_functions)
        ]
        if not orders:
            return None
        return max(orders) > ctx.order

    # -- Hugging Face: half-precision loads trained by a fp16 Trainer
    @cached_property
    def trains_hf_in_fp16(self) -> bool:
        """``TrainingArguments(fp16=True)`` (or a TRL ``...Config(fp16=True)``) is built here."""
        return any(
            HF_TRAINING_ARGS.search(_last(s.func_text)) and S.bool_value(S.keyword_arg_value(s.node, "fp16")) is True
            for s in self.facts.calls
        )

    @cached_property
    def uses_adapters_or_quantization(self) -> bool:
        """PEFT adapters or a quantized base model (``get_peft_model``, ``BitsAndBytesConfig`` ...)."""
        return any(_last(s.func_text) in PEFT_OR_QUANT or (s.func_text or "").startswith("PeftModel.") for s in self.facts.calls)

    def adapters_or_quantization_in(self, scope: Scope) -> bool:
        """``uses_adapters_or_quantization``, for the calls made in one function (or module body)."""
        return any(
            (_last(s.func_text) in PEFT_OR_QUANT or (s.func_text or "").startswith("PeftModel.")) and s.ctx.scope is scope
            for s in self.facts.calls
        )

    @cached_property
    def half_precision_loads(self) -> list[tuple[CallSite, cst.Arg]]:
        """``from_pretrained(..., torch_dtype=torch.float16)`` calls, not quantized, with the dtype argument."""
        return self.loads_in(("torch.float16", "torch.half"))

    @cached_property
    def bfloat16_loads(self) -> list[tuple[CallSite, cst.Arg]]:
        """``from_pretrained(..., torch_dtype=torch.bfloat16)`` (or ``dtype="bfloat16"``), not quantized."""
        return self.loads_in(("torch.bfloat16",), names=("bfloat16",))

    def loads_in(self, dtypes: tuple[str, ...], names: tuple[str, ...] = ()) -> list[tuple[CallSite, cst.Arg]]:
        """``from_pretrained`` calls whose ``torch_dtype=`` / ``dtype=`` is one of ``dtypes`` (or a
        string in ``names``), not quantized, with that argument."""
        out: list[tuple[CallSite, cst.Arg]] = []
        for site in self.facts.calls:
            if not (site.func_text or "").endswith(".from_pretrained"):
                continue
            if any(S.keyword_arg(site.node, k) is not None for k in ("load_in_8bit", "load_in_4bit", "quantization_config")):
                continue
            dtype_arg = None
            for name in ("torch_dtype", "dtype"):
                arg = S.keyword_arg(site.node, name)
                if arg is None:
                    continue
                if (self.facts.bindings.qualname(arg.value, site.ctx.scope) or "") in dtypes or S.string_value(arg.value) in names:
                    dtype_arg = arg
            if dtype_arg is not None:
                out.append((site, dtype_arg))
        return out

    def training_arguments_of(self, trainer: CallSite) -> cst.Call | None:
        """The ``TrainingArguments(...)`` (or TRL ``...Config(...)``) call a ``Trainer`` is given as
        ``args``: inline, or the one value of the name passed; ``None`` when not known."""
        value = S.argument(trainer.node, 1, "args")
        if isinstance(value, cst.Name):
            assigned = self.facts.values.assigned_alternatives(value.value, trainer.ctx.scope, booleans=False)
            value = assigned[0][1] if len(assigned) == 1 else None
        if isinstance(value, cst.Call) and HF_TRAINING_ARGS.search(_last(S.dotted(value.func))):
            return value
        return None

    def trained_by_trainer(self, key: str, seen_from: Context) -> bool:
        """``Trainer(model=key, ...)`` (any ``...Trainer``) receives the module ``key``."""
        return self.trainer_receiving(key, seen_from) is not None

    def trainer_receiving(self, key: str, seen_from: Context) -> CallSite | None:
        """The ``...Trainer(model=key, ...)`` call that receives the module ``key``."""
        for site in self.facts.calls:
            if not (site.func_text or "").endswith("Trainer") or not self.facts.identity.same_variable(key, site.ctx, seen_from):
                continue
            model = S.argument(site.node, 0, "model")
            if model is not None and S.dotted(model) == key:
                return site
        return None
