"""The precision a DeepSpeed engine's config enables, read from the code and, through the project
pass, from a JSON file the code names by a literal path.

``deepspeed.initialize(..., config=None, ..., config_params=None)`` takes the config as a dict or a
path (deepspeed 0.19.8 ``deepspeed/__init__.py:443-446``; ``config_params`` only when ``config`` is
``None``, ``:516-517``); a path is opened and read as (H)JSON (``:534-535``,
``runtime/tensor_parallel/init_utils.py:22-24``). Read here:

- a dict display (``{"fp16": {"enabled": True}}``, ``dict(...)``), or the one such value a name is
  assigned;
- a string literal ending in ``.json``, or the one a name is assigned;
- ``json.load(open("ds.json"))``, ``json.loads(open("ds.json").read())``, and ``json.load(f)`` in
  ``with open("ds.json") as f:``, directly or through the one value a name is assigned.

A path is answered by the project (``facts.project.config_precision``): the file is linted without
one (standard input, ``lint_source``, flake8, the language server) and nothing is read. Anything
else (``args.deepspeed_config``, a path built at run time) is unknown. So is a config the code may
change before DeepSpeed reads it: a name holding it that is written through (``cfg["fp16"] = ...``,
``cfg.update(...)``, ``del cfg["bf16"]``) or handed to a function, unless what is written is under
a literal key that is no precision section (``cfg["train_batch_size"] = 8``). ``"torch_autocast"``
is one; for a float16 ``"torch_autocast"`` config (:data:`~amplint.project.configs.TORCH_AUTOCAST_FP16`)
so is ``"zero_optimization"``, since a ZeRO stage moves the engine's GradScaler into the ZeRO
optimizer.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

import amplint.semantic.syntax as S
from amplint.project.configs import BF16, FP16, TORCH_AUTOCAST_FP16, precision_of

DEEPSPEED_INITIALIZE = frozenset({"deepspeed.initialize"})
# ``deepspeed.initialize(..., config=None, ..., config_params=None)``: the two keywords that
# carry the config (deepspeed/__init__.py, ``initialize``).
CONFIG_KEYWORDS = ("config", "config_params")
# The sections that decide what :func:`deepspeed_precision` answers; ``"zero_optimization"``
# also decides it for a ``"torch_autocast"`` config (the ZeRO optimizer then owns its GradScaler).
_PRECISION_KEYS = frozenset({"fp16", "bf16", "bfloat16", "torch_autocast"})
ZERO_KEY = "zero_optimization"
# Methods of a dict that read it; any other method called on a config may change it.
_READING_METHODS = frozenset({"get", "keys", "values", "items", "copy", "__getitem__", "__contains__"})
# Of those, the ones that hand out no section of the config.
_PURE_READS = frozenset({"keys", "copy", "__contains__"})
# Calls a config may be handed without changing it.
_READING_CALLS = frozenset({"print", "len", "str", "repr", "dict", "copy.copy", "copy.deepcopy", "json.dumps", "json.dump"})
_JSON_READERS = frozenset({"json.load", "json.loads"})
_UNKNOWN = object()  # a value of a dict display that is no literal
_NAME_HOPS = 4


def deepspeed_precision(facts: Any, call: cst.Call, ctx) -> str | None:
    """``"fp16"``/``"bf16"``/:data:`~amplint.project.configs.TORCH_AUTOCAST_FP16` when the config
    of the ``deepspeed.initialize`` call ``call`` enables it; ``None`` when it enables none of
    them or is not known."""
    value = next((S.keyword_arg_value(call, k) for k in CONFIG_KEYWORDS if S.keyword_arg(call, k) is not None), None)
    value, scope, names = _sole_value(facts, value, ctx.scope)
    if value is None:
        return None
    mutable = S.string_value(value) is None  # a dict, not a path
    if mutable and any(_changed(facts, name, owner, _PRECISION_KEYS) for name, owner in names):
        return None  # a dict the code may change before DeepSpeed reads it
    if isinstance(value, (cst.Dict, cst.Call)) and S.dict_items(value) is not None:
        precision = precision_of(_literal(value))
    else:
        path = _config_path(facts, value, scope)
        precision = facts.project.config_precision(path) if path is not None else None
    if precision == TORCH_AUTOCAST_FP16 and mutable and any(
            _changed(facts, name, owner, _PRECISION_KEYS | {ZERO_KEY}) for name, owner in names):
        return None  # ``cfg["zero_optimization"]["stage"] = args.stage``: ZeRO may own the scaler
    return precision if precision in (FP16, BF16, TORCH_AUTOCAST_FP16) else None


def deepspeed_initializations(facts: Any) -> list[tuple[Any, tuple[str, ...]]]:
    """Each ``deepspeed.initialize(...)`` call with the names it is unpacked into
    (``engine, optimizer, _, _ = ...``; deepspeed/__init__.py returns engine, optimizer,
    dataloader, lr_scheduler); ``()`` when its result is not unpacked into names."""
    out = []
    for site in facts.call_index.calls_to(DEEPSPEED_INITIALIZE):
        targets: tuple[str, ...] = ()
        for assignment in facts.assignments_in(site.ctx.scope):
            if assignment.value is site.node and assignment.targets:
                targets = assignment.targets
                break
        out.append((site, targets))
    return out


def _sole_value(facts: Any, value: cst.BaseExpression | None, scope):
    """``value``, or for a name the one value it is assigned (a few names deep), with the scope
    it is read in and the names followed (with the scope that binds each); ``None`` for a name
    that may hold several values."""
    names: list[tuple[str, Any]] = []
    for _ in range(_NAME_HOPS):
        if not isinstance(value, cst.Name):
            return value, scope, names
        assigned = facts.values.assigned_alternatives(value.value, scope, booleans=False)
        if len(assigned) != 1 or assigned[0][1] is None:
            return None, scope, names
        assignment, value = assigned[0]
        scope = assignment.ctx.scope
        names.append((assignment.targets[0] if len(assignment.targets) == 1 else "", scope))
    return (None if isinstance(value, cst.Name) else value), scope, names


def _config_path(facts: Any, value: cst.BaseExpression, scope) -> str | None:
    """The ``.json`` path literal a config is read from: the literal itself, or the file
    ``json.load``/``json.loads`` reads through ``open``."""
    text = S.string_value(value)
    if text is not None:
        return text if text.endswith(".json") else None
    reader = facts.bindings.qualname(value.func, scope) if isinstance(value, cst.Call) else None
    if reader not in _JSON_READERS:
        return None
    source, scope = _opened(facts, S.argument(value, 0, "fp" if reader == "json.load" else "s"), scope, value)
    if not (isinstance(source, cst.Call) and S.dotted(source.func) == "open" and not facts.bindings.bindings_of("open", scope)):
        return None
    path, _, _ = _sole_value(facts, S.argument(source, 0, "file"), scope)
    text = S.string_value(path)
    return text if text is not None and text.endswith(".json") else None


def _opened(facts: Any, source: cst.BaseExpression | None, scope, reader: cst.Call):
    """What a JSON reader's argument comes from, through ``.read()``, a ``with ... as f:`` around
    the reader and names assigned once: the ``open(...)`` call, when it is one."""
    for _ in range(_NAME_HOPS):
        if isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute) and source.func.attr.value == "read" \
                and not source.args:
            source = source.func.value  # json.loads(open(path).read())
        elif isinstance(source, cst.Name) and not facts.bindings.bindings_of(source.value, scope):
            source = _opened_as(facts, source.value, reader)
        elif isinstance(source, cst.Name):
            source, scope, _ = _sole_value(facts, source, scope)
        else:
            break
    return source, scope


def _opened_as(facts: Any, name: str, reader: cst.Call) -> cst.BaseExpression | None:
    """What the one ``with ... as name:`` around ``reader`` opened."""
    found = [
        item.item for node in facts.with_contexts for item in node.items
        if isinstance(item.asname, cst.AsName) and isinstance(item.asname.name, cst.Name)
        and item.asname.name.value == name and facts.tree.contains(node, reader)
    ]
    return found[0] if len(found) == 1 else None


def _changed(facts: Any, name: str, owner, keys: frozenset[str]) -> bool:
    """The dict ``name`` (bound in the scope ``owner``) holds may be changed, or handed on, before
    DeepSpeed reads it; reads, ``deepspeed.initialize(config=name)`` and anything done under a
    literal key that is none of ``keys`` (``cfg["train_batch_size"] = 8``) are not."""
    if not name:
        return True
    handed = {
        id(S.keyword_arg_value(site.node, k)) for site in facts.call_index.calls_to(DEEPSPEED_INITIALIZE) for k in CONFIG_KEYWORDS
    }
    for ref in facts.references:
        if ref.parts[0] != name or not _reads(facts, ref, owner) or id(ref.node) in handed:
            continue
        if len(ref.parts) > 1:
            if ref.parts[1] not in _READING_METHODS:
                return True  # ``cfg.update(...)``, ``cfg.pop("bf16")``
            if ref.parts[1] in _PURE_READS or _got_other_key(ref, keys) or not _written(facts, ref):
                continue
            return True  # ``section = cfg.get("fp16")``
        parent = ref.parent
        if isinstance(parent, cst.Subscript) and parent.value is ref.node:
            key = _first_key(parent)
            if key is not None and key not in keys:
                continue
        if _written(facts, ref):
            return True
    return False


def _reads(facts: Any, ref, owner) -> bool:
    """``ref`` reads the name its first part names as bound in ``owner``."""
    found = facts.bindings.bindings_of(ref.parts[0], ref.ctx.scope)
    return found[0].scope is owner if found else owner.kind == "module"


def _got_other_key(ref, keys: frozenset[str]) -> bool:
    """``cfg.get("train_batch_size")``: a read of a literal key that is none of ``keys``."""
    call = ref.parent
    if not (isinstance(call, cst.Call) and call.func is ref.node and ref.parts[1] in ("get", "__getitem__") and call.args):
        return False
    key = S.string_value(call.args[0].value)
    return key is not None and key not in keys


def _first_key(subscript: cst.Subscript) -> str | None:
    element = subscript.slice[0] if len(subscript.slice) == 1 else None
    return S.string_value(element.slice.value) if element is not None and isinstance(element.slice, cst.Index) else None


def _written(facts: Any, ref) -> bool:
    """The statement of ``ref`` (a config name, or a precision section under it) may change what
    it refers to or hand it on: an assignment, augmented assignment or ``del`` through it, an
    assignment of it to another name (unless a reading call takes it: ``text = json.dumps(cfg)``),
    a ``return``, a method call on it that is no read, or a call that is no read taking it. A
    compound statement's header (``if cfg["fp16"]["enabled"]:``, ``"bf16" in cfg``), an
    ``assert`` and a reading call (``print(cfg)``) are reads."""
    stmt = ref.ctx.stmt
    if stmt is None:
        return True
    holding = [site for site in facts.calls_within(stmt) if facts.tree.contains(site.node, ref.node)]
    reading = [site.node for site in holding if _callee(facts, site.node, ref.ctx.scope) in _READING_CALLS]
    for site in holding:
        func = site.node.func
        if isinstance(func, cst.Attribute) and facts.tree.contains(func.value, ref.node) and func.attr.value not in _READING_METHODS:
            return True
        for arg in site.node.args:
            if facts.tree.contains(arg.value, ref.node) and not any(site.node is read for read in reading) \
                    and not any(facts.tree.contains(arg.value, read) for read in reading):
                return True  # handed to a call that may change it (not only a reading call's result)
    read_by_call = bool(reading) or any(
        isinstance(s.node.func, cst.Attribute) and facts.tree.contains(s.node.func.value, ref.node) for s in holding)
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, (cst.Assert, cst.Expr)):
            continue
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else \
            [small.target] if isinstance(small, (cst.AugAssign, cst.AnnAssign, cst.Del)) else []
        if any(facts.tree.contains(target, ref.node) for target in targets):
            return True
        value = getattr(small, "value", None)
        if value is not None and facts.tree.contains(value, ref.node) and not read_by_call:
            return True  # ``section = cfg["fp16"]``, ``return cfg``
    return False


def _callee(facts: Any, call: cst.Call, scope) -> str | None:
    """The qualified name of a call's callee, or the name of a builtin the file does not bind."""
    qualname = facts.bindings.qualname(call.func, scope)
    if qualname is not None:
        return qualname
    text = S.dotted(call.func)
    return text if text is not None and not facts.bindings.bindings_of(text.split(".")[0], scope) else None


def _literal(node: cst.BaseExpression) -> object:
    """A dict display as the plain value DeepSpeed would be given (strings, numbers, booleans,
    ``None``, lists, dicts); anything else is unknown, and a dict with a ``**`` entry or a key
    that is no literal string is unknown as a whole."""
    items = S.dict_items(node)
    if items is not None:
        if any(key is None or key == "**" for key, _, _ in items):
            return _UNKNOWN
        return {key: _literal(value) for key, value, _ in items}
    if isinstance(node, (cst.List, cst.Tuple)):
        return [_literal(e.value) if isinstance(e, cst.Element) else _UNKNOWN for e in node.elements]
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    text = S.string_value(node)
    if text is not None:
        return text
    if isinstance(node, (cst.Integer, cst.Float)):
        return node.evaluated_value
    return _UNKNOWN
