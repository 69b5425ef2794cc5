"""Canonical qualified names of the PyTorch AMP API and helpers to read dotted expressions."""

from __future__ import annotations

import libcst as cst

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


def dotted_parts(node: cst.CSTNode) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; ``None`` for anything that is not a plain dotted name."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        parts.reverse()
        return parts
    return None


def dotted(node: cst.CSTNode | None) -> str | None:
    if node is None:
        return None
    parts = dotted_parts(node)
    return ".".join(parts) if parts is not None else None


def module_name(node: cst.BaseExpression | None) -> str:
    """The dotted text of an import's module (``torch.cuda.amp``)."""
    if node is None:
        return ""
    return dotted(node) or ""


def string_value(node: cst.CSTNode | None) -> str | None:
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:  # noqa: BLE001 - odd prefixes are simply not literal strings for us
            return None
        return value if isinstance(value, str) else None
    return None


def bool_value(node: cst.CSTNode | None) -> bool | None:
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    return None


def keyword_arg(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional_args(call: cst.Call) -> list[cst.Arg]:
    return [arg for arg in call.args if arg.keyword is None and not arg.star]


def has_star_args(call: cst.Call) -> bool:
    return any(arg.star for arg in call.args)


def argument(call: cst.Call, position: int | None, name: str) -> cst.BaseExpression | None:
    """The value bound to parameter ``name`` (at ``position`` when passed positionally)."""
    arg = keyword_arg(call, name)
    if arg is not None:
        return arg.value
    if position is not None:
        positionals = positional_args(call)
        if len(positionals) > position:
            return positionals[position].value
    return None


def dict_items(node: cst.CSTNode | None) -> list[tuple[str | None, cst.BaseExpression, cst.CSTNode]] | None:
    """``{"k": v}`` / ``dict(k=v)`` as ``[(key or None, value, element)]``; ``None`` if not a dict display.

    ``**spread`` entries are returned with key ``"**"`` (their content is unknown).
    """
    out: list[tuple[str | None, cst.BaseExpression, cst.CSTNode]] = []
    if isinstance(node, cst.Dict):
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                out.append((string_value(element.key), element.value, element))
            else:
                out.append(("**", element.value, element))
        return out
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "dict":
        for arg in node.args:
            if arg.keyword is not None:
                out.append((arg.keyword.value, arg.value, arg))
            else:
                out.append(("**", arg.value, arg))
        return out
    return None


def keyword_arg_value(call: cst.Call, name: str) -> cst.BaseExpression | None:
    arg = keyword_arg(call, name)
    return arg.value if arg is not None else None
