"""Framework-level AMP: Accelerate's ``Accelerator``, Lightning's ``Trainer``/``Fabric`` and the
HF ``TrainingArguments``, read from the per-file records (no framework is ever imported).

The ``self.facts.frameworks`` service of :class:`~amplint.amp.facts.FileFacts`. What each framework
does with an argument was read in its installed source, cited where it is used:
accelerate 1.16.0, lightning / pytorch-lightning 2.6.6 (and pytorch-lightning 1.9.5 for what
Lightning 2 removed), transformers 5.25.0.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import libcst as cst

import amplint.semantic.syntax as S
from amplint.amp.events import EventKind
from amplint.semantic.records import CallSite, Context
from amplint.semantic.values import alternatives

# -- Accelerate ---------------------------------------------------------------------------------

ACCELERATOR_CLASSES = frozenset({"accelerate.Accelerator", "accelerate.accelerator.Accelerator"})
# ``Accelerator(device_placement, split_batches, mixed_precision, ...)``: accelerator.py:274-278.
_MIXED_PRECISION_POSITION = 2
# ``accelerate.utils.PrecisionType`` members (a ``str`` enum: utils/dataclasses.py ``class PrecisionType``).
_PRECISION_MEMBERS = {"NO": "no", "FP8": "fp8", "FP16": "fp16", "BF16": "bf16"}
# With these the Accelerator builds no GradScaler even for "fp16": accelerator.py:536-539 builds one
# only when ``self.device.type != "cpu"`` and the distributed type is neither DeepSpeed nor
# Megatron-LM (which scale the loss themselves).
_NO_SCALER_KEYWORDS = ("deepspeed_plugin", "deepspeed_plugins", "megatron_lm_plugin")


@dataclass(frozen=True)
class AcceleratorBuild:
    """One ``x = Accelerator(...)`` and what its ``mixed_precision`` may be."""

    site: CallSite
    target: str  # the dotted text it is assigned to (``accelerator``, ``self.accelerator``)
    # The literal precisions it may take (lower-cased, as state.py:890 lower-cases them), or
    # ``None`` when some value is not a literal.
    precisions: frozenset[str] | None
    # ``"literal"`` (one known value), ``"choice"`` (several known values), ``"expression"``
    # (the value is computed: ``args.mixed_precision``), ``"default"`` (not passed, or ``None``:
    # Accelerate reads ``ACCELERATE_MIXED_PRECISION`` / the accelerate config, state.py:887-891).
    source: str
    expression: cst.BaseExpression | None  # the ``mixed_precision`` argument, when passed
    builds_scaler: bool  # False when ``cpu=True`` or a DeepSpeed/Megatron plugin is passed

    @property
    def may_be_fp16(self) -> bool:
        return self.builds_scaler and (self.precisions is None or "fp16" in self.precisions)


# -- Lightning ----------------------------------------------------------------------------------

LIGHTNING_TRAINERS = frozenset(
    {
        "lightning.Trainer", "lightning.pytorch.Trainer", "lightning.pytorch.trainer.Trainer",
        "lightning.pytorch.trainer.trainer.Trainer", "pytorch_lightning.Trainer", "pytorch_lightning.trainer.Trainer",
        "pytorch_lightning.trainer.trainer.Trainer",
    }
)
LIGHTNING_FABRICS = frozenset(
    {
        "lightning.Fabric", "lightning.fabric.Fabric", "lightning.fabric.fabric.Fabric", "lightning_fabric.Fabric",
        "lightning_fabric.fabric.Fabric",
    }
)
# lightning/fabric/plugins/precision/precision.py:24 (2.6.6): the legacy spellings Lightning 2
# still accepts and what ``_convert_precision_to_unified_args`` (fabric/connector.py:557-576, used
# by the Trainer too: trainer/connectors/accelerator_connector.py:224) maps them to, warning
# "`precision=16` is supported for historical reasons but its usage is discouraged" for all but
# 32 and 64 (connector.py:570-574).
LEGACY_PRECISIONS = {"16": "16-mixed", "bf16": "bf16-mixed"}
# The parameters of Lightning 2.6.6's ``Trainer.__init__`` and ``Fabric.__init__``. A call that
# passes any other keyword is not written for Lightning 2 (``gpus=``, ``amp_backend=`` ... were
# removed in 2.0: they are in pytorch-lightning 1.9.5's ``Trainer.__init__`` and not in 2.6.6's),
# and on Lightning 1.x the legacy value is the only spelling: 1.9.5's accelerator_connector.py:93
# accepts "64", "32", "16", "bf16" and raises for "16-mixed".
TRAINER_PARAMETERS = frozenset(
    {
        "accelerator", "strategy", "devices", "num_nodes", "precision", "logger", "callbacks", "fast_dev_run",
        "max_epochs", "min_epochs", "max_steps", "min_steps", "max_time", "limit_train_batches", "limit_val_batches",
        "limit_test_batches", "limit_predict_batches", "overfit_batches", "val_check_interval",
        "check_val_every_n_epoch", "num_sanity_val_steps", "log_every_n_steps", "enable_checkpointing",
        "enable_progress_bar", "enable_model_summary", "accumulate_grad_batches", "gradient_clip_val",
        "gradient_clip_algorithm", "deterministic", "benchmark", "inference_mode", "use_distributed_sampler",
        "profiler", "detect_anomaly", "barebones", "plugins", "sync_batchnorm", "reload_dataloaders_every_n_epochs",
        "default_root_dir", "enable_autolog_hparams", "model_registry",
    }
)
FABRIC_PARAMETERS = frozenset(
    {"accelerator", "strategy", "devices", "num_nodes", "precision", "plugins", "callbacks", "loggers"}
)


@dataclass(frozen=True)
class LegacyPrecision:
    site: CallSite
    value: cst.BaseExpression  # the literal passed as ``precision=``
    legacy: str  # "16" or "bf16"
    replacement: str  # "16-mixed" or "bf16-mixed"
    kind: str  # "Trainer" or "Fabric"


# -- Hugging Face Trainer -----------------------------------------------------------------------

TRAINING_ARGUMENTS = frozenset(
    {
        "transformers.TrainingArguments", "transformers.training_args.TrainingArguments",
        "transformers.Seq2SeqTrainingArguments", "transformers.training_args_seq2seq.Seq2SeqTrainingArguments",
    }
)
# transformers/training_args.py:1784-1788 (5.25.0), in ``TrainingArguments.__post_init__``.
EXCLUSIVE_PRECISION_FLAGS = (("fp16", "bf16"), ("fp16_full_eval", "bf16_full_eval"))


@dataclass(frozen=True)
class ConflictingPrecision:
    site: CallSite
    flags: tuple[str, str]
    node: cst.Arg  # the second flag's argument


# -- shared -------------------------------------------------------------------------------------

_EXPECTING = frozenset({"pytest.raises", "pytest.warns", "pytest.deprecated_call"})
_EXPECTING_METHODS = ("assertRaises", "assertRaisesRegex", "assertWarns", "assertWarnsRegex")


class FrameworkFacts:
    """Accelerators, Lightning trainers and HF training arguments of one file."""

    def __init__(self, facts) -> None:
        self.facts = facts

    @cached_property
    def accelerator_builds(self) -> list[AcceleratorBuild]:
        """Every assignment of an ``accelerate.Accelerator(...)`` call in the file, in source order."""
        out: list[AcceleratorBuild] = []
        for assignment in self.facts.assignments:
            value = assignment.value
            site = self.facts.call_site(value) if isinstance(value, cst.Call) else None
            if site is None or site.qualname not in ACCELERATOR_CLASSES:
                continue
            for target in assignment.targets:
                out.append(self._accelerator_build(site, target))
        return out

    def _accelerator_build(self, site: CallSite, target: str) -> AcceleratorBuild:
        call = site.node
        builds_scaler = S.bool_value(S.keyword_arg_value(call, "cpu")) is not True and not any(
            S.keyword_arg(call, name) is not None and not S.is_none(S.keyword_arg_value(call, name))
            for name in _NO_SCALER_KEYWORDS
        )
        if S.has_star_args(call):
            return AcceleratorBuild(site, target, None, "expression", None, builds_scaler)
        value = S.argument(call, _MIXED_PRECISION_POSITION, "mixed_precision")
        if value is None or S.is_none(value):
            return AcceleratorBuild(site, target, None, "default", value, builds_scaler)
        precisions = self._literal_precisions(value, site.ctx)
        if precisions is None:
            source = "expression"
        else:
            source = "literal" if len(precisions) == 1 else "choice"
        return AcceleratorBuild(site, target, precisions, source, value, builds_scaler)

    def _literal_precisions(self, value: cst.BaseExpression, ctx: Context, depth: int = 0) -> frozenset[str] | None:
        """The precision strings ``value`` may be: literals, ``PrecisionType.X``, the arms of
        ``a if c else b``, and a name whose every assignment is one of those; ``None`` otherwise."""
        found: set[str] = set()
        for leaf in alternatives(value, booleans=False):
            text = S.string_value(leaf)
            if text is not None:
                found.add(text.lower())
                continue
            qualname = self.facts.bindings.qualname(leaf, ctx.scope) if isinstance(leaf, cst.Attribute) else None
            if qualname is not None and qualname.startswith("accelerate.") and ".PrecisionType." in qualname:
                member = _PRECISION_MEMBERS.get(qualname.rsplit(".", 1)[-1])
                if member is None:
                    return None
                found.add(member)
                continue
            if isinstance(leaf, cst.Name) and depth == 0:
                assigned = self.facts.values.assigned_alternatives(leaf.value, ctx.scope, booleans=False)
                if not assigned or any(node is None for _, node in assigned):
                    return None
                for _, node in assigned:
                    inner = self._literal_precisions(node, ctx, depth + 1)
                    if inner is None:
                        return None
                    found |= inner
                continue
            return None
        return frozenset(found) if found else None

    def accelerator_builds_of(self, text: str, ctx: Context, _depth: int = 0) -> list[AcceleratorBuild]:
        """The builds of the Accelerator variable the dotted ``text`` names at ``ctx``; empty when any
        assignment of that variable is not an ``Accelerator(...)`` call (then it is not known to be one).

        A parameter (``def train(accelerator, ...)``) is followed one call level up: it is an
        Accelerator when every same-file call passes a name that is one where it is called (and
        there is at least one such call), through at most two levels of calls."""
        function = self.facts.function_by_node.get(ctx.scope.node) if ctx.scope.kind == "function" else None
        if function is not None and text in function.params and text != "self":
            if _depth >= 2:
                return []
            values = self.facts.values.parameter_values(function, text)
            if not values or any(not isinstance(value, cst.Name) for value, _ in values):
                return []
            found: list[AcceleratorBuild] = []
            for value, scope in values:
                caller = next((site.ctx for site in self.facts.callgraph.callers_of(function) if site.ctx.scope is scope), None)
                builds = self.accelerator_builds_of(value.value, caller, _depth + 1) \
                    if caller is not None and caller.scope is not ctx.scope else []
                if not builds:
                    return []
                found.extend(builds)
            return found
        variable = self.facts.identity.variable(text, ctx.scope)
        if variable is None:
            return []
        builds = [b for b in self.accelerator_builds if b.target == text and self.facts.identity.variable(text, b.site.ctx.scope) == variable]
        if not builds:
            return []
        others = [
            a for a in self.facts.assignments_to(text)
            if self.facts.identity.variable(text, a.ctx.scope) == variable and not any(a.value is b.site.node for b in builds)
        ]
        return [] if others else builds

    def accelerator_method_calls(self, method: str) -> list[tuple[CallSite, str]]:
        """``x.<method>(...)`` calls whose receiver ``x`` is a plain dotted name, with its text."""
        out = []
        for site in self.facts.calls:
            text = site.func_text
            if text is not None and text.endswith(f".{method}") and text.count(".") >= 1:
                out.append((site, text[: -len(method) - 1]))
        return out

    def optimizer_steps_in(self, ctx: Context) -> list:
        """The ``optimizer.step()`` events of ``ctx``'s function."""
        return [e for e in self.facts.timeline.events_by_scope.get(ctx.scope, []) if e.kind is EventKind.OPTIMIZER_STEP]

    @cached_property
    def legacy_lightning_precisions(self) -> list[LegacyPrecision]:
        """``Trainer(precision=16)``, ``Fabric(precision="bf16")``...: Lightning 2 calls whose
        ``precision=`` is a legacy literal, in source order."""
        out = []
        for site in self.facts.call_index.calls_to(LIGHTNING_TRAINERS | LIGHTNING_FABRICS):
            trainer = site.qualname in LIGHTNING_TRAINERS
            known = TRAINER_PARAMETERS if trainer else FABRIC_PARAMETERS
            call = site.node
            if any(arg.keyword is not None and arg.keyword.value not in known for arg in call.args):
                continue  # written for Lightning 1.x (or not a Lightning call at all)
            value = S.keyword_arg_value(call, "precision")
            if isinstance(value, cst.Integer):
                legacy = value.value if value.value == "16" else None
            else:
                legacy = S.string_value(value)
            if legacy not in LEGACY_PRECISIONS or self.expects_failure(site.ctx):
                continue
            out.append(LegacyPrecision(site, value, legacy, LEGACY_PRECISIONS[legacy], "Trainer" if trainer else "Fabric"))
        return out

    @cached_property
    def conflicting_training_arguments(self) -> list[ConflictingPrecision]:
        """``TrainingArguments(fp16=True, bf16=True)`` (or the ``*_full_eval`` pair), both literals."""
        out = []
        for site in self.facts.call_index.calls_to(TRAINING_ARGUMENTS):
            if self.expects_failure(site.ctx):
                continue
            for flags in EXCLUSIVE_PRECISION_FLAGS:
                args = [S.keyword_arg(site.node, flag) for flag in flags]
                if all(arg is not None and S.bool_value(arg.value) is True for arg in args):
                    second = max(args, key=lambda arg: site.node.args.index(arg))
                    out.append(ConflictingPrecision(site, flags, second))
        return out

    def expects_failure(self, ctx: Context) -> bool:
        """``ctx`` is inside ``with pytest.raises(...)`` / ``self.assertRaises(...)`` (or a warning
        check): a test that builds the bad call on purpose, as the frameworks' own tests do."""
        for node in ctx.withs:
            for item in node.items:
                inner = item.item
                site = self.facts.call_site(inner) if isinstance(inner, cst.Call) else None
                if site is None:
                    continue
                if site.qualname in _EXPECTING or (site.func_text or "").rsplit(".", 1)[-1] in _EXPECTING_METHODS:
                    return True
        return False
