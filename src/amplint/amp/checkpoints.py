"""Checkpoints: what a ``torch.save`` writes, and what resume code restores.

A checkpoint is read from the code as far as it shows: a dict display or ``dict(...)`` call
passed to ``torch.save``, or a dict built in a variable first and completed key by key
(``ckpt["optimizer"] = optimizer.state_dict()``). The scalers a checkpoint should hold are the
GradScalers in scope where it is written; the resume side is every ``load_state_dict``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import libcst as cst

import amplint.amp.catalogue as API
from amplint.amp.checkpoint_shapes import (  # noqa: F401 - re-exported: the rules and fixes read them here
    LOADER_WORDS, Item, _record_items, _record_to_dict, names_optimizer_state, names_scaler_state, scaler_key_like,
)
from amplint.amp.events import Event, EventKind
import amplint.semantic.syntax as S
from amplint.semantic.records import Context

# Calls that change a dict in place, so that its contents are no longer what the code shows.
_MUTATORS = ("update", "setdefault", "__setitem__")

@dataclass
class Checkpoint:
    """What one ``torch.save`` writes, as far as the code shows."""

    # (literal key or None, value, the dict element / argument / assignment that holds it);
    # ``**spread`` entries have the key ``"**"``.
    items: list[Item] = field(default_factory=list)
    container: cst.CSTNode | None = None  # the dict display or ``dict(...)`` call an item can join
    # (key, statement) for each ``ckpt["key"] = value`` that completes the dict after it is built
    subscript_stmts: list[tuple[str | None, cst.CSTNode]] = field(default_factory=list)
    variable: str | None = None  # the dict's variable, when it is built before the save
    # ``torch.save(optimizer.state_dict(), "optimizer.pt")``: one state per file, no dict
    single: bool = False
    # ``Snapshot(model_state=..., optimizer_state=...)``, saved as it is or as ``asdict(snapshot)``
    record: str | None = None

    @property
    def keys(self) -> list[str | None]:
        return [key for key, _, _ in self.items]

    @property
    def has_spread(self) -> bool:
        """Some entries come from ``**other``: the full contents are unknown."""
        return "**" in self.keys

    @property
    def key_nodes(self) -> list[cst.CSTNode]:
        """The key expressions of the dict display's entries (for their quote style)."""
        return [element.key for _, _, element in self.items if isinstance(element, cst.DictElement)]

    @property
    def optimizer_subscript_stmts(self) -> list[cst.CSTNode]:
        """The ``ckpt["optimizer..."] = ...`` statements that complete the dict."""
        return [stmt for key, stmt in self.subscript_stmts if names_optimizer_state(key)]


class CheckpointFacts:
    """The ``facts.checkpoints`` service of :class:`~amplint.amp.facts.FileFacts`."""

    def __init__(self, facts: "FileFacts") -> None:
        self.facts = facts

    # -- the save side
    @cached_property
    def checkpoint_saves(self) -> list[Event]:
        """Every ``torch.save`` in source order."""
        return [e for e in self.facts.timeline.events if e.kind == EventKind.SAVE]

    @cached_property
    def _checkpoints(self) -> dict[Event, Checkpoint | None]:
        return {}

    def saved_checkpoint(self, event: Event) -> Checkpoint | None:
        """What the ``torch.save`` of ``event`` writes, or ``None`` when the code does not show it."""
        if event not in self._checkpoints:
            self._checkpoints[event] = self._read_checkpoint(event)
        return self._checkpoints[event]

    def _read_checkpoint(self, event: Event) -> Checkpoint | None:
        obj = S.argument(event.call, 0, "obj")
        if self._state_dict_receiver(obj) is not None:
            return Checkpoint(items=[(None, obj, obj)], single=True)  # type: ignore[list-item]
        return self.checkpoint_value(obj, event.ctx)

    def checkpoint_value(self, obj: cst.CSTNode | None, at: Context, depth: int = 0) -> Checkpoint | None:
        """What the dict ``obj`` holds when it is written at ``at``: a display, ``dict(...)``, or a
        variable built before in the same function (and completed key by key)."""
        items = S.dict_items(obj)
        if items is not None:
            return Checkpoint(items=items, container=obj)
        if _record_to_dict(obj):
            obj = obj.args[0].value  # ``asdict(snapshot)``: what the record holds
        if not isinstance(obj, cst.Name):
            return None
        name = obj.value
        before = [a for a in self.facts.assignments if a.ctx.scope is at.scope and a.ctx.order < at.order]
        whole = [a for a in before if name in a.targets and not a.subscript_keys]
        if not whole:
            return None
        last = whole[-1]
        if _record_to_dict(last.value) and len(last.targets) == 1 and depth == 0:
            # ``snapshot = asdict(state)`` then ``torch.save(snapshot, path)``: what the record holds
            completed = any(base == name for a in before if a.ctx.order > last.ctx.order for base, _ in a.subscript_keys)
            if completed or self.dict_escapes(name, at, last.ctx.order):
                return None  # ``snapshot["scaler"] = ...`` or ``snapshot.update(...)`` after: not the record alone
            return self.checkpoint_value(last.value, at, depth + 1)
        items = S.dict_items(last.value)
        if items is None and len(last.targets) == 1 and (record := _record_items(last.value)) is not None:
            later = [a for a in before if a.ctx.order > last.ctx.order]
            if any(t.startswith(name + ".") for a in later for t in a.targets) or self.dict_escapes(name, at, last.ctx.order):
                return None  # fields set after construction, or the record handed to other code
            return Checkpoint(items=record[1], record=record[0], variable=name)
        if items is None or len(last.targets) != 1:
            return None
        if len(whole) > 1 and tuple(at.branches[: len(last.ctx.branches)]) != tuple(last.ctx.branches):
            return None  # built in one branch, something else in another: cannot tell what is saved
        checkpoint = Checkpoint(items=list(items), container=last.value, variable=name)
        for assignment in before:
            if assignment.ctx.order < last.ctx.order:
                continue
            for base, key in assignment.subscript_keys:
                if base == name:
                    checkpoint.items.append((key, assignment.value, assignment.node))  # type: ignore[arg-type]
                    checkpoint.subscript_stmts.append((key, assignment.ctx.stmt))  # type: ignore[arg-type]
        if self.dict_escapes(name, at, last.ctx.order):
            return None
        return checkpoint

    def dict_escapes(self, name: str, save: Context, built: int) -> bool:
        """The dict ``name``, built at order ``built``, is changed in place or handed to other code
        (``ckpt.update(extra)``, ``add_state(ckpt)``) before the save at ``save``: its contents are
        then unknown."""
        for site in self.facts.calls:
            if site.ctx.scope is not save.scope or site.qualname == "torch.save" or not (built < site.ctx.order < save.order):
                continue
            func = site.node.func
            if _record_to_dict(site.node):
                continue  # ``asdict(state)`` reads the record and changes nothing
            if isinstance(func, cst.Attribute) and S.dotted(func.value) == name and func.attr.value in _MUTATORS:
                return True
            if any(isinstance(arg.value, cst.Name) and arg.value.value == name for arg in site.node.args):
                return True
        return False

    def subscript_key_node(self, stmt: cst.CSTNode) -> cst.BaseExpression | None:
        """The literal key of the ``d["key"] = value`` assignment written in ``stmt``."""
        subscripts = [a for a in self.facts.assignments if a.node is not None and a.ctx.stmt is stmt]
        if not subscripts or not isinstance(subscripts[0].node, cst.Assign):
            return None
        target = subscripts[0].node.targets[0].target
        if isinstance(target, cst.Subscript) and isinstance(target.slice[0].slice, cst.Index):
            return target.slice[0].slice.value
        return None

    def _state_dict_receiver(self, value: cst.CSTNode) -> str | None:
        """``x`` for a ``x.state_dict()`` value."""
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "state_dict":
            return S.dotted(value.func.value)
        return None

    def is_optimizer_state(self, key: str | None, value: cst.CSTNode) -> bool:
        """A checkpoint item holds an optimizer's state: by its key, or ``optimizer.state_dict()``."""
        if isinstance(value, cst.Name) and value.value == "None":
            return False  # ``"optimizer": None``: a weights-only checkpoint
        if names_optimizer_state(key):
            return True
        receiver = self._state_dict_receiver(value)
        return receiver is not None and (self.facts.optim.is_optimizer(receiver) or API.is_optimizer_name(receiver))

    def is_model_state(self, key: str | None, value: cst.CSTNode) -> bool:
        """A checkpoint item holds a model's weights: by its key, or a trained module's ``state_dict()``."""
        if key and key != "**" and ("model" in key.lower() or key in ("state_dict", "net", "network")):
            return True
        receiver = self._state_dict_receiver(value)
        return receiver is not None and any(receiver == module for module, _ in self.facts.optim.optimized_modules)

    def holds_scaler_state(self, checkpoint: Checkpoint, scalers: list[str]) -> bool:
        """An item of ``checkpoint`` already holds AMP state: a scaler key or a scaler in its value."""
        return any(names_scaler_state(key) or self.mentions_scaler(value, scalers) for key, value, _ in checkpoint.items)

    def scaler_saved_beside(self, event: Event, scalers: list[str]) -> bool:
        """Another ``torch.save`` of the same function writes a scaler (``torch.save(scaler.state_dict(), p)``)."""
        return any(
            other is not event and other.ctx.scope is event.ctx.scope and self.mentions_scaler(other.call, scalers)
            for other in self.checkpoint_saves
        )

    def saved_scaler_key(self, scaler: str, optimizer_key: str) -> str | None:
        """The literal key under which this file saves ``scaler``'s state next to ``optimizer_key``."""
        for event in self.checkpoint_saves:
            checkpoint = self.saved_checkpoint(event)
            if checkpoint is None or optimizer_key not in checkpoint.keys:
                continue
            for key, value, _ in checkpoint.items:
                if key and key != "**" and self.mentions_scaler(value, [scaler]):
                    return key
        if not any(key == optimizer_key for a in self.facts.assignments for _, key in a.subscript_keys):
            return None
        for assignment in self.facts.assignments:
            for _, key in assignment.subscript_keys:
                if key and assignment.value is not None and self.mentions_scaler(assignment.value, [scaler]) and "scaler" in key.lower():
                    return key
        return None

    # -- the resume side
    @cached_property
    def state_restores(self) -> list[Event]:
        """Every ``x.load_state_dict(...)`` in source order."""
        return [e for e in self.facts.timeline.events if e.kind == EventKind.LOAD_STATE_DICT]

    def restores_optimizer(self, event: Event) -> bool:
        """A ``load_state_dict`` that restores an optimizer (known, or named like one), not a scaler."""
        receiver = event.receiver
        if receiver is None or self.facts.scaling.is_scaler(receiver):
            return False
        return event.optimizer is not None or API.is_optimizer_name(receiver)

    def checkpoint_lookup(self, event: Event) -> tuple[str, str, cst.BaseExpression] | None:
        """Where a ``load_state_dict`` reads its state: ``("ckpt", "optimizer", <the key literal>)``
        for ``optimizer.load_state_dict(ckpt["optimizer"])``; ``None`` for any other argument."""
        args = S.positional_args(event.call)
        arg = args[0].value if args else S.keyword_arg_value(event.call, "state_dict")
        if not (isinstance(arg, cst.Subscript) and len(arg.slice) == 1 and isinstance(arg.slice[0].slice, cst.Index)):
            return None
        checkpoint = S.dotted(arg.value)
        key_node = arg.slice[0].slice.value
        key = S.string_value(key_node)
        if checkpoint is None or key is None:
            return None
        return checkpoint, key, key_node

    def scaler_restored_beside(self, event: Event, scalers: list[str]) -> bool:
        """One of ``scalers`` is restored where ``event`` restores the optimizer: its own
        ``load_state_dict`` in the same function (or, for ``self.`` scalers, the same class), or the
        scaler handed to a loader helper (``load_checkpoint(path, model, optimizer, scaler)``)."""
        own = self.facts.callgraph.function_of(event.ctx.scope)
        for other in self.state_restores:
            if other.receiver is None or not self.facts.scaling.is_scaler(other.receiver) or other.receiver not in scalers:
                continue
            if other.ctx.scope is event.ctx.scope:
                return True
            if other.receiver.startswith("self.") and own is not None:
                function = self.facts.callgraph.function_of(other.ctx.scope)
                if function is not None and function.class_name == own.class_name:
                    return True
        for site in self.facts.calls:
            if site.ctx.scope is not event.ctx.scope:
                continue
            last = (site.func_text or "").rsplit(".", 1)[-1].lower()
            if any(word in last for word in LOADER_WORDS) and any(self.mentions_scaler(arg.value, scalers) for arg in site.node.args):
                return True
        return False

    # -- the scalers a checkpoint should hold
    def checkpointed_scalers(self, ctx: Context) -> list[str]:
        """The GradScalers whose state a checkpoint written at ``ctx`` should hold (a question of
        ``ctx``'s scope alone, answered once per scope; the list is shared, not to be changed).

        Scalers that may be enabled and are really used: a local, a parameter, ``self.x`` used in
        the same class, else a module-level scaler (a function's own scaler is the one it
        checkpoints, not a global). Optional scalers (``None`` on some path) are left out unless
        the file scales a loss with them (``scaler = None; if args.amp: scaler = GradScaler()``
        in a loop that calls ``scaler.scale(loss).backward()``: with AMP on, its state is lost).
        """
        by_scope = self._checkpointed_scalers_by_scope
        if ctx.scope not in by_scope:
            by_scope[ctx.scope] = self._find_checkpointed_scalers(ctx)
        return by_scope[ctx.scope]

    @cached_property
    def _checkpointed_scalers_by_scope(self) -> dict:
        return {}

    def _find_checkpointed_scalers(self, ctx: Context) -> list[str]:
        out: list[str] = []
        module_level: list[str] = []
        function = self.facts.callgraph.function_of(ctx.scope)
        for key, info in self.facts.scaling.scalers.items():
            if self.facts.scaling.scaler_provably_disabled(key, ctx.scope):
                continue  # built with ``enabled=False`` here, whatever other functions do
            if not info.constructions and not (info.evidence & {"scale-backward", "unscale_", "named-step"}):
                continue
            if self.facts.scaling.scaler_optional(key) and "scale-backward" not in info.evidence:
                continue  # ``None`` unless some flag is on, and this file never scales a loss with it
            if key.split(".")[0] == "self":
                if function is not None and function.class_name is not None and self._used_in_class(key, function.class_name):
                    out.append(key)
                continue
            if "." in key:
                continue
            if self.facts.scaling.own_assignments_to(key, ctx.scope):
                out.append(key)
            elif key in self.closure_scalers(ctx):
                out.append(key)
            elif ctx.scope.kind == "function" and key in (function.params if function else ()):
                out.append(key)
            elif key not in ctx.scope.bindings and self.facts.scaling.own_assignments_to(key, self.facts.identity.module_scope):
                module_level.append(key)
        out.extend(w for w in self.scaler_wrappers(ctx) if w not in out)
        return out or module_level

    def closure_scalers(self, ctx: Context) -> set[str]:
        """Scalers of the function enclosing ``ctx``'s nested function (``def save_ckpt(path):``
        inside ``train``): the nested helper reads them from the closure, they are its scaler."""
        scope = ctx.scope
        parent = scope.parent
        if scope.kind != "function" or parent is None or parent.kind != "function":
            return set()
        return {
            key for key in self.facts.scaling.scalers
            if "." not in key and key not in scope.bindings and self.facts.scaling.own_assignments_to(key, parent)
        }

    def scaler_wrappers(self, ctx: Context) -> list[str]:
        """Locals of ``ctx``'s function that hold a GradScaler wrapper: timm's / MAE's
        ``NativeScaler()`` (a class named ``...Scaler``), or a project class that builds a GradScaler.
        They have ``state_dict()``/``load_state_dict()`` and belong in the checkpoint like the scaler."""
        out: list[str] = []
        for assignment in self.facts.assignments_in(ctx.scope):
            if len(assignment.targets) != 1 or "." in assignment.targets[0]:
                continue
            name = assignment.targets[0]
            if name in out or name in self.facts.scaling.scalers:
                continue
            site = self.facts.call_site(assignment.value) if isinstance(assignment.value, cst.Call) else None
            if site is None or site.qualname in API.SCALER_CLASSES:
                continue
            if (site.func_text or "").rsplit(".", 1)[-1].endswith("Scaler") or self.facts.project.builds_scaler(site):
                local = self.facts.scaling.own_assignments_to(name, ctx.scope)
                if any(S.is_none(a.value) for a in local) and all(a.ctx.branches for a in local if not S.is_none(a.value)):
                    continue  # ``None`` unless AMP is on: optional, like an optional GradScaler
                out.append(name)
        return out

    def _used_in_class(self, key: str, class_name: str) -> bool:
        """``self.x`` (or ``self.x.y``) is referenced in a method of the class ``class_name``."""
        parts = tuple(key.split("."))
        return any(
            ref.parts[: len(parts)] == parts
            and (function := self.facts.callgraph.function_of(ref.ctx.scope)) is not None
            and function.class_name == class_name
            for ref in self.facts.references
        )

    def scaler_may_be_none(self, key: str, ctx: Context) -> bool:
        """``key`` may hold ``None`` at ``ctx``: assigned ``None`` (or ``x or None``) there, or a
        parameter defaulting to ``None``."""
        assignments = list(self.facts.assignments_to(key, ctx.scope))
        if key in self.closure_scalers(ctx):
            assignments += self.facts.scaling.own_assignments_to(key, ctx.scope.parent)
        for assignment in assignments:
            if assignment.value is None or S.may_be_none(assignment.value):
                return True
        function = self.facts.callgraph.function_of(ctx.scope)
        if function is not None and key in function.params:
            default = S.parameter_default(function.node, key)
            return default is not None and S.may_be_none(default)
        return False

    def scaler_created_at(self, key: str, ctx: Context) -> int:
        """The first point of ``ctx``'s function where ``key`` exists (0: before its body runs)."""
        function = self.facts.callgraph.function_of(ctx.scope)
        if key in self.closure_scalers(ctx):
            # A nested helper sees its enclosing function's scaler only if it is bound before the
            # ``def`` (a call made earlier would find no scaler): else "after" ``ctx``.
            def_line = self.facts.position(ctx.scope.node).start.line
            first = min(self.facts.position(a.ctx.stmt).start.line for a in self.facts.scaling.own_assignments_to(key, ctx.scope.parent))
            return 0 if first < def_line else ctx.order + 1
        if key.startswith("self.") or (function is not None and key in function.params):
            return 0
        return min((a.ctx.order for a in self.facts.scaling.own_assignments_to(key, ctx.scope)), default=0)

    def mentions_scaler(self, node: cst.CSTNode, scalers: list[str]) -> bool:
        """``node`` refers to one of ``scalers`` (or to anything named like a scaler)."""
        for ref in self.facts.references_within(node):
            text = ".".join(ref.parts)
            if any(text == s or text.startswith(s + ".") for s in scalers):
                return True
            if any("scaler" in part.lower() for part in ref.parts):
                return True
        return False
