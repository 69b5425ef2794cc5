"""The PyTorch API amplint knows: canonical qualified names, dtypes and optimizer spellings."""

from __future__ import annotations

import re

# Submodule spellings and re-exports mapped to one canonical name each, so rules
# compare against a single spelling whatever import form the user chose.
_PREFIX_ALIASES: tuple[tuple[str, str], ...] = (
    ("torch.cuda.amp.autocast_mode.", "torch.cuda.amp."),
    ("torch.cuda.amp.grad_scaler.", "torch.cuda.amp."),
    ("torch.cuda.amp.common.", "torch.cuda.amp."),
    ("torch.cpu.amp.autocast_mode.", "torch.cpu.amp."),
    ("torch.cpu.amp.grad_scaler.", "torch.cpu.amp."),
    ("torch.amp.autocast_mode.", "torch.amp."),
    ("torch.amp.grad_scaler.", "torch.amp."),
    ("torch.nn.utils.clip_grad.", "torch.nn.utils."),
    ("torch.distributed.fsdp.sharded_grad_scaler.", "torch.distributed.fsdp."),
    ("timm.utils.clip_grad.", "timm.utils."),
)
_EXACT_ALIASES = {
    "torch.autocast": "torch.amp.autocast",
    "torch.GradScaler": "torch.amp.GradScaler",
}

AUTOCAST = frozenset({"torch.amp.autocast", "torch.cuda.amp.autocast", "torch.cpu.amp.autocast"})
SCALER_CLASSES = frozenset(
    {
        "torch.amp.GradScaler",
        "torch.cuda.amp.GradScaler",
        "torch.cpu.amp.GradScaler",
        "torch.distributed.fsdp.ShardedGradScaler",
    }
)
CLIP_FUNCTIONS = frozenset(
    {
        "torch.nn.utils.clip_grad_norm_",
        "torch.nn.utils.clip_grad_norm",
        "torch.nn.utils.clip_grad_value_",
        "timm.utils.dispatch_clip_grad",
    }
)
PARTIAL = frozenset({"functools.partial"})
# Context managers that do nothing: what code passes where autocast is off (``amp_autocast = suppress``).
NULL_CONTEXTS = frozenset({"contextlib.suppress", "contextlib.nullcontext"})
# Context managers / decorators under which no autograd graph is recorded.
GRAD_DISABLING = frozenset(
    {
        "torch.no_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.grad_mode.inference_mode",
    }
)
CONTEXTMANAGER = frozenset({"contextlib.contextmanager"})


def canonical(qualname: str) -> str:
    qualname = _EXACT_ALIASES.get(qualname, qualname)
    for prefix, replacement in _PREFIX_ALIASES:
        if qualname.startswith(prefix):
            return replacement + qualname[len(prefix):]
    return qualname




_DTYPES = {
    "float16": "float16", "half": "float16", "fp16": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
    "float32": "float32", "float": "float32", "fp32": "float32",
    "float64": "float64", "double": "float64",
}


def dtype_from_text(text: str | None) -> str | None:
    """``torch.float16`` / ``torch.half`` / ``"bf16"`` as a canonical dtype name."""
    if text is None:
        return None
    return _DTYPES.get(text.rsplit(".", 1)[-1])


OPTIMIZER_NAME = re.compile(
    r"^_*(opt|optim|optimizer|optimiser|optimizers)(_\w+)?$|^\w+_(opt|optim|optimizer|optimiser)$|^(g|d)_?opt\w*$",
    re.IGNORECASE,
)
OPTIMIZER_FACTORY = re.compile(r"(^|_)(create|build|get|make|configure|init)_optimi[sz]er", re.IGNORECASE)
OPTIMIZER_CLASSES = frozenset(
    {"Adam", "AdamW", "SGD", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "LBFGS",
     "Adafactor", "Lion", "LAMB", "Lamb", "AdamW8bit", "Adam8bit", "PagedAdamW", "FusedAdam", "SparseAdam",
     "ZeroRedundancyOptimizer", "Muon"}
)


def is_optimizer_name(key: str) -> bool:
    """``optimizer``, ``self.opt_g``, ``d_optim`` ...: a name people give optimizers (not schedulers)."""
    last = key.rsplit(".", 1)[-1]
    if "sched" in last.lower():
        return False
    return bool(OPTIMIZER_NAME.match(last))


def is_optimizer_class(qualname: str | None, func_text: str | None, factories: bool = True) -> bool:
    """A call of ``torch.optim.X``, a known optimizer class, or (with ``factories``) a factory."""
    qualname = qualname or ""
    last = (func_text or "").rsplit(".", 1)[-1]
    return bool(
        (qualname.startswith("torch.optim.") and ".lr_scheduler" not in qualname and ".swa_utils" not in qualname)
        or (last in OPTIMIZER_CLASSES and (qualname == "" or "sched" not in qualname))
        or (factories and OPTIMIZER_FACTORY.search(last))
    )


# Objects whose ``clip_grad_norm_`` unscales by itself (framework wrappers), so it is no bare clip.
FRAMEWORK_CLIPPERS = frozenset(
    {"accelerator", "fabric", "trainer", "strategy", "engine", "deepspeed", "model_engine", "precision_plugin"}
)

# Words that mark a condition or a name as being about mixed precision (``use_amp``, ``args.fp16``).
AMP_WORDS = frozenset(
    {"amp", "scaler", "scaling", "fp16", "float16", "half", "mixed", "precision", "autocast", "apex",
     "fp32", "float32", "bf16", "bfloat16", "dtype", "scale"}
)

# Name words of a function that runs once per step, batch or epoch (``fit_one_epoch``,
# ``run_epoch``, ``epoch_step``, ``train_on_batch``); plurals (``train_steps``) run many.
_PER_PASS_WORDS = frozenset({"step", "epoch", "batch", "iteration"})


def names_one_pass(name: str) -> bool:
    return any(word in _PER_PASS_WORDS for word in name.lower().strip("_").split("_"))


PER_STEP_NAMES = frozenset(
    {"train_step", "training_step", "train_one_epoch", "train_epoch", "run_step", "train_batch",
     "training_epoch", "_train_step", "_training_step", "_train_one_epoch", "_train_epoch", "train_on_batch",
     "step", "_do_train_step", "optimize_step", "optimizer_step"}
)
