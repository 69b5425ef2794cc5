"""Checkpoints written or restored by a helper: ``save_checkpoint(model, optimizer, epoch, path)``.

The helper is read from its summary (:mod:`amplint.project`): a function of this file or of a
module it imports that saves (or restores) the optimizer handed to it. A call is a
:class:`HelperCheckpoint` when an enabled scaler is in scope there and is not handed over; what
the helper does with scalers says what the fix can be:

- it takes a scaler parameter the call leaves out (``save_checkpoint(..., scaler=None)``): pass it;
- it saves the whole object it is given (``save_checkpoint(state, is_best)``): the dict the call
  builds is the checkpoint, and the scaler's state goes into it;
- it has no way to receive a scaler: report only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import libcst as cst

import amplint.amp.catalogue as API
from amplint.amp.checkpoint_libraries import DELEGATING_KEYWORDS, LIBRARY_HELPERS
from amplint.amp.checkpoints import LOADER_WORDS
from amplint.amp.summaries import nested_function_summary
from amplint.project.query import Callee
import amplint.semantic.syntax as S


# How many helpers that only hand their parameters on are read through.
_FORWARDING_DEPTH = 2
# Words in a call's name that say it writes a checkpoint.
_SAVER_WORDS = ("save", "checkpoint", "ckpt", "dump", "snapshot")


@dataclass(frozen=True)
class HelperCheckpoint:
    site: object  # the CallSite
    callee: Callee
    side: str  # "save" | "load"
    scalers: tuple[str, ...]
    scaler_param: str | None  # the helper's scaler parameter the call leaves out
    whole: cst.BaseExpression | None  # the argument saved as it is (``save_checkpoint(state, ...)``)


def _bound_arguments(call: cst.Call, callee: Callee) -> dict[str, cst.BaseExpression] | None:
    """Parameter -> argument value; ``None`` when the call cannot be matched (``*args``, ``**kw``,
    unknown keywords)."""
    bound: dict[str, cst.BaseExpression] = {}
    position = 0
    for arg in call.args:
        if arg.star:
            return None
        keyword = arg.keyword.value if arg.keyword is not None else None
        param = callee.function.parameter_for(None if keyword else position, keyword)
        if keyword is None:
            position += 1
        if param is None:
            if keyword is not None and callee.function.has_varkw:
                continue
            return None
        bound[param] = arg.value
    return bound


def _qualified_name(function) -> str | None:
    """``Trainer.save`` / ``save_checkpoint``: how a summary names the function of ``FunctionInfo``."""
    if function is None:
        return None
    name = function.node.name.value
    return f"{function.class_name}.{name}" if function.class_name else name


def _is_optimizer_value(facts, value: cst.BaseExpression) -> bool:
    """``optimizer``, ``self.optimizer`` or ``optimizer.state_dict()``."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "state_dict":
        value = value.func.value
    text = S.dotted(value)
    return text is not None and (facts.optim.is_optimizer(text) or API.is_optimizer_name(text))


class CheckpointHelperFacts:
    """Helper checkpoints of a file; used by AMP006 (``facts`` is the file's FileFacts)."""

    def __init__(self, facts) -> None:
        self.facts = facts
        # call -> the construction of the object whose method it calls (``Checkpointer(model, optimizer)``)
        self._constructions: dict[cst.Call, cst.Call] = {}

    def calls(self):
        facts = self.facts
        for site in facts.calls:
            # A call with no scaler in scope cannot leave one out; asked first, because asking
            # for the callee of an imported name reads the project.
            if not facts.checkpoints.checkpointed_scalers(site.ctx):
                continue
            callee = self.callee(site)
            if callee is None:
                continue
            function = callee.function
            side = "save" if function.saves_optimizer or function.saved_whole else "load" if function.restores_optimizer else None
            if side is None or self._inside(site, callee):
                continue
            found = self._read(site, callee, side)
            if found is not None:
                yield found

    def callee(self, site, depth: int = 0) -> Callee | None:
        """The project function ``site`` calls (or a helper nested in the calling function), else
        a library checkpointer it builds. A helper of this file that saves or restores nothing
        itself but hands its parameters to one that does is read as that one, through its own
        parameters (``save_epoch(model, optimizer=None, scaler=None)`` calling
        ``write_ckpt(path, model, optimizer=optimizer, scaler=scaler)``)."""
        callee = self.facts.project.callee(site) or self._method_of_local_object(site) or self._nested(site)
        if callee is None and site.qualname in LIBRARY_HELPERS:
            library, function = LIBRARY_HELPERS[site.qualname]
            callee = Callee(function, library)
        if callee is not None and not callee.module and depth < _FORWARDING_DEPTH:
            callee = self._forwarded(callee, depth) or callee
        return callee

    def _nested(self, site) -> Callee | None:
        """``save_ckp(state, path)`` where ``save_ckp`` is a ``def`` inside an enclosing function
        (the only binding of the name there)."""
        name = site.func_text or ""
        bindings = self.facts.bindings.bindings_of(name, site.ctx.scope) if name.isidentifier() else []
        if not bindings or any(b.kind.name != "DEF" or b.scope is not bindings[0].scope for b in bindings):
            return None
        if bindings[0].scope.kind != "function":
            return None
        functions = [f for f in self.facts.callgraph.called_functions(site) if f.scope.parent is bindings[0].scope]
        return Callee(nested_function_summary(self.facts, functions[0]), "") if len(functions) == 1 else None

    def _forwarded(self, callee: Callee, depth: int) -> Callee | None:
        """``callee`` (a function of this file) read through the helpers it hands its parameters
        to, when it saves and restores nothing itself."""
        function = callee.function
        if function.saves_optimizer or function.saved_whole or function.restores_optimizer or function.saves:
            return None
        info = self._function_info(function)
        if info is None:
            return None
        own = set(function.params) | set(function.keyword_only)
        found: dict[str, set[str]] = {"saved_params": set(), "saved_whole": set(), "restored_params": set(), "scaler_params": set()}
        flags = {"saves_optimizer": False, "saves_scaler": False, "restores_optimizer": False, "restores_scaler": False}
        for inner in self.facts.calls_within(info.node):
            if inner.ctx.scope is not info.scope:
                continue
            target = self.callee(inner, depth + 1)
            bound = _bound_arguments(inner.node, target) if target is not None else None
            if not bound:
                continue
            passed = {param: value.value for param, value in bound.items() if isinstance(value, cst.Name) and value.value in own}
            for field in found:
                found[field] |= {passed[q] for q in getattr(target.function, field) if q in passed}
            inner_fn = target.function
            scaler_reaches = not inner_fn.scaler_params or any(q in passed for q in inner_fn.scaler_params)
            flags["saves_optimizer"] |= inner_fn.saves_optimizer and bool(found["saved_params"] or found["saved_whole"])
            flags["saves_scaler"] |= inner_fn.saves_scaler and scaler_reaches
            flags["restores_optimizer"] |= inner_fn.restores_optimizer and bool(found["restored_params"])
            flags["restores_scaler"] |= inner_fn.restores_scaler and scaler_reaches
        if not (flags["saves_optimizer"] or found["saved_whole"] or flags["restores_optimizer"]):
            return None
        composed = replace(function, **flags, **{field: tuple(sorted(set(getattr(function, field)) | values if field == "scaler_params" else values))
                                                for field, values in found.items()})
        return Callee(composed, callee.module)

    def _function_info(self, function):
        """The FunctionInfo a summary of this file describes (by name, then by the line of its ``def``)."""
        named = [f for f in self.facts.functions if _qualified_name(f) == function.name]
        if len(named) > 1:
            named = [f for f in named if self.facts.position(f.node.name).start.line == function.line]
        return named[0] if len(named) == 1 else None

    def _method_of_local_object(self, site) -> Callee | None:
        """``saver.save_model(model, optimizer)`` where ``saver = CheckpointSaver(...)`` is bound
        once in the calling function, or ``self.checkpointer.save(path)`` where
        ``self.checkpointer = Checkpointer(...)`` is the one assignment of that attribute in the
        class, and ``CheckpointSaver``/``Checkpointer`` is a class of this file."""
        parts = (site.func_text or "").split(".")
        facts = self.facts
        if len(parts) == 2 and parts[0] != "self":
            local = [a for a in facts.assignments_to(parts[0], site.ctx.scope) if a.ctx.scope is site.ctx.scope]
        elif len(parts) == 3 and parts[0] == "self" and site.ctx.scope.class_scope is not None:
            owner = site.ctx.scope.class_scope
            target = f"self.{parts[1]}"
            local = [a for a in facts.assignments_to(target) if a.ctx.scope.class_scope is owner]
            parts = [target, parts[2]]
        else:
            return None
        if len(local) != 1 or len(local[0].targets) != 1 or not isinstance(local[0].value, cst.Call):
            return None
        self._constructions[site.node] = local[0].value
        cls = S.dotted(local[0].value.func)
        bindings = facts.bindings.bindings_of(cls, site.ctx.scope) if cls and "." not in cls else []
        if not bindings or any(b.scope.kind != "module" or b.kind.name != "CLASS" for b in bindings):
            return None
        function = facts.project.own.function(f"{cls}.{parts[1]}")
        return Callee(function, "") if function is not None else None

    def _inside(self, site, callee: Callee) -> bool:
        """The call is in the helper itself, or the helper is in this file and sees a scaler of
        its own (a module-level one, or its enclosing function's): its ``torch.save`` is then
        checked where it is written, unless it saves an argument whole."""
        if callee.module:
            return False
        facts = self.facts
        if _qualified_name(facts.callgraph.function_of(site.ctx.scope)) == callee.function.name:
            return True
        if callee.function.saved_whole:
            return False  # ``torch.save(state, path)``: what it holds shows only where it is called
        for event in (*facts.checkpoints.checkpoint_saves, *facts.checkpoints.state_restores):
            function = facts.callgraph.function_of(event.ctx.scope)
            if _qualified_name(function) != callee.function.name:
                continue
            for scaler in facts.checkpoints.checkpointed_scalers(event.ctx):
                own = scaler in function.params or bool(facts.scaling.own_assignments_to(scaler, event.ctx.scope))
                if not own:
                    return True
        return False

    def _read(self, site, callee: Callee, side: str) -> HelperCheckpoint | None:
        facts = self.facts
        bound = _bound_arguments(site.node, callee)
        if bound is None:
            return None
        scalers = facts.checkpoints.checkpointed_scalers(site.ctx)
        if not scalers or any(facts.checkpoints.mentions_scaler(value, scalers) for value in bound.values()):
            return None
        if any(p in DELEGATING_KEYWORDS or S.dotted(v) == "self" for p, v in bound.items()):
            return None  # handed a trainer whose own state_dict may hold the scaler
        if self._scaler_handled_beside(site, scalers, side):
            return None
        function = callee.function
        missing = [p for p in function.scaler_params if p not in bound and p in function.defaults]
        if side == "save":
            whole = next((bound[p] for p in function.saved_whole if p in bound), None)
            if whole is not None:
                return HelperCheckpoint(site, callee, side, tuple(scalers), None, whole)
            handed = [p for p in function.saved_params if p in bound and _is_optimizer_value(facts, bound[p])]
            if not handed and "self" in function.saved_params and function.saves_optimizer:
                handed = self._built_with_optimizer(site.node, scalers)
            covered = function.saves_scaler
        else:
            handed = [p for p in function.restored_params if p in bound and _is_optimizer_value(facts, bound[p])]
            covered = function.restores_scaler
        if not handed:
            return None
        if covered and not missing:
            return None  # the helper saves (restores) a scaler it finds itself
        return HelperCheckpoint(site, callee, side, tuple(scalers), missing[0] if len(missing) == 1 else None, None)

    def _built_with_optimizer(self, call: cst.Call, scalers: list[str]) -> list[str]:
        """``["self"]`` when the object whose method ``call`` calls was built with an optimizer and
        without the scaler (``Checkpointer(model, optimizer)``): the state its method saves from
        ``self`` is the optimizer's."""
        built = self._constructions.get(call)
        if built is None or any(arg.star for arg in built.args):
            return []
        values = [arg.value for arg in built.args]
        if any(self.facts.checkpoints.mentions_scaler(value, scalers) for value in values):
            return []
        return ["self"] if any(_is_optimizer_value(self.facts, value) for value in values) else []

    def _scaler_handled_beside(self, site, scalers: list[str], side: str) -> bool:
        """The scaler is saved (restored) another way where the helper is called: in the same
        function (or, for ``self.`` scalers, the same class), by ``torch.save(scaler.state_dict(), p)``,
        ``scaler.load_state_dict(...)``, or a call named like a saver (loader) that is handed the scaler."""
        facts = self.facts
        if side == "save":
            if any(self._beside(site, e.ctx) and facts.checkpoints.mentions_scaler(e.call, scalers) for e in facts.checkpoints.checkpoint_saves):
                return True
        elif any(self._beside(site, e.ctx) and e.receiver in scalers for e in facts.checkpoints.state_restores):
            return True
        words = _SAVER_WORDS if side == "save" else LOADER_WORDS
        for other in facts.calls:
            if other is site or not self._beside(site, other.ctx):
                continue
            name = (other.func_text or "").rsplit(".", 1)[-1].lower()
            callee = self.callee(other)
            effect = callee is not None and (callee.function.saves_scaler if side == "save" else callee.function.restores_scaler)
            if (effect or any(word in name for word in words)) and any(facts.checkpoints.mentions_scaler(a.value, scalers) for a in other.node.args):
                return True
        return False

    def _beside(self, site, ctx) -> bool:
        """``ctx`` is in the function of ``site``, or in a method of the same class."""
        if ctx.scope is site.ctx.scope:
            return True
        own = self.facts.callgraph.function_of(site.ctx.scope)
        other = self.facts.callgraph.function_of(ctx.scope)
        return own is not None and other is not None and own.class_name is not None and own.class_name == other.class_name


# -- a class's own ``state_dict``: ``return {"model": ..., "optimizer": ...}``
@dataclass(frozen=True)
class StateMethod:
    """``def state_dict(self): return {...}`` of a class: the dict is the class's checkpoint."""

    function: object  # FunctionInfo
    value: cst.BaseExpression  # the returned dict
    ctx: object  # the Context of a call inside the dict (the return's place)


def state_dict_methods(facts):
    """The ``state_dict`` methods whose body returns a dict display (at its top level)."""
    for function in facts.functions:
        if function.class_name is None or function.node.name.value != "state_dict":
            continue
        for statement in function.node.body.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if isinstance(small, cst.Return) and S.dict_items(small.value) is not None:
                    calls = facts.calls_within(small.value)
                    if calls:
                        yield StateMethod(function, small.value, calls[0].ctx)


def scaler_key_read(call: cst.Call) -> tuple[str, str] | None:
    """``("ckpt", "scaler")`` for ``x.load_state_dict(ckpt["scaler"])`` or ``(ckpt.get("scaler"))``."""
    args = S.positional_args(call)
    arg = args[0].value if args else None
    if isinstance(arg, cst.Subscript) and len(arg.slice) == 1 and isinstance(arg.slice[0].slice, cst.Index):
        base, key = S.dotted(arg.value), S.string_value(arg.slice[0].slice.value)
    elif isinstance(arg, cst.Call) and isinstance(arg.func, cst.Attribute) and arg.func.attr.value == "get" and arg.args:
        base, key = S.dotted(arg.func.value), S.string_value(arg.args[0].value)
    else:
        return None
    return (base, key) if base and key else None
