from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import libcst as cst

from amplint.fix import edits as E
from amplint.amp import EventKind, catalogue as API
from amplint.semantic import syntax as S
from amplint.amp import Event
from amplint.semantic import Context
from amplint.fix import Fix, NoFix
from amplint.model import FixSafety
from amplint.rules.base import SCALER_TRIGGERS, Invalid, Rule, Violation

_LOADER_WORDS = ("load", "resume", "restore", "checkpoint", "ckpt")


@dataclass
class _Checkpoint:
    """What a ``torch.save`` writes, as far as the code shows."""

    items: list[tuple[str | None, cst.BaseExpression, cst.CSTNode]] = field(default_factory=list)
    container: cst.CSTNode | None = None  # the dict display we can add to
    subscript_stmts: list[tuple[str | None, cst.CSTNode]] = field(default_factory=list)  # (key, statement)
    variable: str | None = None


def _quote(node: cst.CSTNode | None) -> str:
    """The quote character of a string literal key (``'`` or ``"``), default ``"``."""
    if isinstance(node, cst.SimpleString):
        text = node.value.lstrip("rRbBuU")
        if text.startswith("'"):
            return "'"
    return '"'


def _key_nodes(items) -> list[cst.CSTNode]:
    out = []
    for _, _, element in items:
        if isinstance(element, cst.DictElement):
            out.append(element.key)
    return out


def _styled_key(optimizer_key: str | None) -> str:
    """``"optimizer_state_dict"`` -> ``"scaler_state_dict"``; ``"optimizer"`` -> ``"scaler"``."""
    if optimizer_key:
        lower = optimizer_key
        for suffix in ("_state_dict", "_state", "_sd", "_dict"):
            if lower.endswith(suffix) and "optim" in lower[: -len(suffix)].lower():
                return "scaler" + suffix
    return "scaler"


class ScalerStateNotCheckpointed(Rule):
    """
    ## What it does
    Finds checkpoints that save the optimizer (and model) state but not the `GradScaler`'s while a
    scaler is in scope (a local, a parameter, a module-level scaler or `self.scaler`): dict literals
    passed to `torch.save`, a dict built in a variable first, `dict(...)` calls and
    `checkpoint["optimizer"] = ...` assignments. It also finds resume code that restores the
    optimizer with `optimizer.load_state_dict(...)` but never calls `scaler.load_state_dict(...)`.

    ## Why is this bad?
    The scaler's state (the current scale and its growth tracker) is part of the training state.
    A run resumed without it starts again at the initial scale (65536 by default) and skips
    optimizer steps (inf/NaN gradients) until it has backed off to the scale the first run had
    already found, so each restart silently loses a burst of updates. The AMP examples save
    `scaler.state_dict()` next to the model and optimizer and restore it on resume.

    ## Example
    ```python
    import torch

    scaler = torch.amp.GradScaler("cuda")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
    ```

    ## Use instead
    ```python
    import torch

    scaler = torch.amp.GradScaler("cuda")
    torch.save(
        {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scaler": scaler.state_dict()},
        path,
    )
    ```

    ## Fix safety
    The fix is safe. On save it adds `"scaler": scaler.state_dict()` (spelled as the scaler is in
    scope, keyed like the dict's other keys, e.g. `"scaler_state_dict"`). On load it inserts
    `if "scaler" in checkpoint: scaler.load_state_dict(checkpoint["scaler"])` right after the
    optimizer is restored, with the key the save side of the same file uses, guarded so that
    checkpoints written before the fix still load. No fix is offered when the scaler may be `None`
    there, when several scalers are in scope, or when the checkpoint variable cannot be seen.

    ## References
    - [CUDA Automatic Mixed Precision examples: saving/resuming](https://pytorch.org/docs/stable/notes/amp_examples.html)
    - [Automatic Mixed Precision recipe: saving/resuming](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    - [torch.amp.GradScaler.state_dict](https://pytorch.org/docs/stable/amp.html)
    """

    code = "AMP006"
    name = "scaler-state-not-checkpointed"
    summary = "Checkpoint saves/restores the optimizer but not the GradScaler"
    fix_safety = FixSafety.SAFE
    triggers = SCALER_TRIGGERS

    valid = (
        "import torch\nscaler = torch.amp.GradScaler('cuda')\ntorch.save(model.state_dict(), path)\n",
        "import torch\ntorch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict()}, path)\n",
        "import torch\nscaler = torch.amp.GradScaler('cuda')\n"
        "torch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict(), 'amp_scaler': scaler.state_dict()}, path)\n",
        "import torch\nscaler = torch.amp.GradScaler('cuda', enabled=False)\n"
        "torch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict()}, path)\n",
        "import torch\nscaler = torch.amp.GradScaler('cuda')\nckpt = torch.load(path)\n"
        "optimizer.load_state_dict(ckpt['optimizer'])\nscaler.load_state_dict(ckpt['scaler'])\n",
    )
    invalid = (
        Invalid(
            "import torch\nscaler = torch.amp.GradScaler('cuda')\n"
            "torch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict()}, path)\n",
            fixed="import torch\nscaler = torch.amp.GradScaler('cuda')\n"
            "torch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict(), 'scaler': scaler.state_dict()}, path)\n",
        ),
        Invalid(
            "import torch\nscaler = torch.amp.GradScaler('cuda')\nckpt = torch.load(path)\n"
            "optimizer.load_state_dict(ckpt['optimizer_state_dict'])\n",
            fixed="import torch\nscaler = torch.amp.GradScaler('cuda')\nckpt = torch.load(path)\n"
            "optimizer.load_state_dict(ckpt['optimizer_state_dict'])\n"
            "if 'scaler_state_dict' in ckpt:\n    scaler.load_state_dict(ckpt['scaler_state_dict'])\n",
        ),
        Invalid(
            "import torch\nscaler = torch.amp.GradScaler('cuda')\n"
            "torch.save(dict(model=model.state_dict(), optimizer=optimizer.state_dict()), path)\n",
            fixed="import torch\nscaler = torch.amp.GradScaler('cuda')\n"
            "torch.save(dict(model=model.state_dict(), optimizer=optimizer.state_dict(), scaler=scaler.state_dict()), path)\n",
        ),
    )

    # ------------------------------------------------------------------ scalers in scope
    def _scalers_in_scope(self, ctx: Context) -> list[str]:
        facts = self.facts
        out: list[str] = []
        module_level: list[str] = []
        for key, info in facts.scalers.items():
            if info.provably_disabled:
                continue
            if not info.constructions and not (info.evidence & {"scale-backward", "unscale_", "named-step"}):
                continue
            if self._optional(key):
                continue
            head = key.split(".")[0]
            if head == "self":
                own = facts.function_of(ctx.scope)
                if own is None or own.class_name is None:
                    continue
                parts = tuple(key.split("."))
                if any(
                    ref.parts[: len(parts)] == parts
                    and (fn := facts.function_of(ref.ctx.scope)) is not None
                    and fn.class_name == own.class_name
                    for ref in facts.references
                ):
                    out.append(key)
                continue
            if "." in key:
                continue
            if any(a.ctx.scope is ctx.scope for a in facts.assignments_to(key)):
                out.append(key)
            elif ctx.scope.kind == "function" and key in (facts.function_of(ctx.scope).params if facts.function_of(ctx.scope) else ()):
                out.append(key)
            elif key not in ctx.scope.bindings and any(a.ctx.scope.kind == "module" for a in facts.assignments_to(key)):
                module_level.append(key)
        # A scaler of this function (local or parameter) is the one it checkpoints, not a global.
        return out or module_level

    def _optional(self, key: str) -> bool:
        """``self.scaler = None`` and built only under some ``if``: AMP may be off on every path we see."""
        assignments = self.facts.assignments_to(key)
        nones = [a for a in assignments if isinstance(a.value, cst.Name) and a.value.value == "None"]
        others = [a for a in assignments if a not in nones]
        return bool(nones) and bool(others) and all(a.ctx.branches for a in others)

    def _maybe_none(self, key: str, ctx: Context) -> bool:
        facts = self.facts
        for assignment in facts.assignments_to(key, ctx.scope):
            value = assignment.value
            if value is None or self._has_none(value):
                return True
        function = facts.function_of(ctx.scope)
        if function is not None and key in function.params:
            params = function.node.params
            for param in list(params.params) + list(params.kwonly_params) + list(params.posonly_params):
                if param.name.value == key and param.default is not None and self._has_none(param.default):
                    return True
        return False

    def _has_none(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Name) and value.value == "None":
            return True
        if isinstance(value, cst.IfExp):
            return self._has_none(value.body) or self._has_none(value.orelse)
        if isinstance(value, cst.BooleanOperation):
            return self._has_none(value.left) or self._has_none(value.right)
        return False

    def _scaler_order(self, key: str, ctx: Context) -> int | None:
        """The first point in ``ctx``'s function where ``key`` exists (0: before the body runs)."""
        facts = self.facts
        if key.startswith("self."):
            return 0
        function = facts.function_of(ctx.scope)
        if function is not None and key in function.params:
            return 0
        local = [a.ctx.order for a in facts.assignments_to(key) if a.ctx.scope is ctx.scope]
        if local:
            return min(local)
        return 0

    def _mentions_scaler(self, node: cst.CSTNode, scalers: list[str]) -> bool:
        for ref in self.facts.references_within(node):
            text = ".".join(ref.parts)
            if any(text == s or text.startswith(s + ".") for s in scalers):
                return True
            if any("scaler" in part.lower() for part in ref.parts):
                return True
        return False

    # ------------------------------------------------------------------ check
    def check(self) -> Iterator[Violation]:
        facts = self.facts
        saves = [e for e in facts.events if e.kind == EventKind.SAVE]
        loads = [e for e in facts.events if e.kind == EventKind.LOAD_STATE_DICT]
        reported: set[int] = set()
        for event in saves:
            violation = self._check_save(event, saves)
            if violation is not None:
                container = self._checkpoint(event)
                key = id(container.container) if container is not None and container.container is not None else id(event)
                if key in reported:
                    continue
                reported.add(key)
                yield violation
        for event in loads:
            violation = self._check_load(event, loads)
            if violation is not None:
                yield violation

    # -- save side
    def _checkpoint(self, event: Event) -> _Checkpoint | None:
        facts = self.facts
        obj = S.argument(event.call, 0, "obj")
        items = S.dict_items(obj)
        if items is not None:
            return _Checkpoint(items=items, container=obj)
        if not isinstance(obj, cst.Name):
            return None
        name = obj.value
        scope = event.ctx.scope
        checkpoint = _Checkpoint(variable=name)
        before = [a for a in facts.assignments if a.ctx.scope is scope and a.ctx.order < event.order]
        whole = [a for a in before if name in a.targets and not a.subscript_keys]
        if not whole:
            return None
        last = whole[-1]
        items = S.dict_items(last.value)
        if items is None or len(last.targets) != 1:
            return None
        if len(whole) > 1 and tuple(event.ctx.branches[: len(last.ctx.branches)]) != tuple(last.ctx.branches):
            return None  # built in one branch, something else in another: cannot tell what is saved
        checkpoint.items = list(items)
        checkpoint.container = last.value
        for assignment in before:
            if assignment.ctx.order < last.ctx.order:
                continue
            for base, key in assignment.subscript_keys:
                if base == name:
                    checkpoint.items.append((key, assignment.value, assignment.node))  # type: ignore[arg-type]
                    checkpoint.subscript_stmts.append((key, assignment.ctx.stmt))  # type: ignore[arg-type]
        # The dict escapes into other code (``ckpt.update(extra)``, ``add_state(ckpt)``): contents unknown.
        for site in facts.calls:
            if site.ctx.scope is not scope or site.qualname == "torch.save" or not (last.ctx.order < site.ctx.order < event.order):
                continue
            func = site.node.func
            if isinstance(func, cst.Attribute) and S.dotted(func.value) == name and func.attr.value in ("update", "setdefault", "__setitem__"):
                return None
            if any(isinstance(arg.value, cst.Name) and arg.value.value == name for arg in site.node.args):
                return None
        return checkpoint

    def _optimizer_item(self, key: str | None, value: cst.CSTNode) -> bool:
        if isinstance(value, cst.Name) and value.value == "None":
            return False  # ``"optimizer": None``: a weights-only checkpoint
        if key and key != "**" and "optim" in key.lower():
            return True
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "state_dict":
            receiver = S.dotted(value.func.value)
            if receiver is not None and (self.facts.is_optimizer(receiver) or API.is_optimizer_name(receiver)):
                return True
        return False

    def _model_item(self, key: str | None, value: cst.CSTNode) -> bool:
        if key and key != "**" and ("model" in key.lower() or key in ("state_dict", "net", "network")):
            return True
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "state_dict":
            receiver = S.dotted(value.func.value)
            return receiver is not None and any(receiver == k for k, _ in self.facts.optimized_modules)
        return False

    def _check_save(self, event: Event, saves: list[Event]) -> Violation | None:
        scalers = self._scalers_in_scope(event.ctx)
        if not scalers:
            return None
        checkpoint = self._checkpoint(event)
        if checkpoint is None or any(key == "**" for key, _, _ in checkpoint.items):
            return None
        optimizer_keys = [key for key, value, _ in checkpoint.items if self._optimizer_item(key, value)]
        has_model = any(self._model_item(key, value) for key, value, _ in checkpoint.items)
        if not optimizer_keys:
            return None
        for key, value, _ in checkpoint.items:
            if key and ("scaler" in key.lower() or key.lower() in ("amp", "amp_state")):
                return None
            if self._mentions_scaler(value, scalers):
                return None
        # Saved elsewhere in the same function (``torch.save(scaler.state_dict(), ...)``).
        for other in saves:
            if other is not event and other.ctx.scope is event.ctx.scope and self._mentions_scaler(other.call, scalers):
                return None
        names = ", ".join(f"`{s}`" for s in scalers)
        message = (
            f"This checkpoint saves the optimizer{' and model' if has_model else ''} state but not the GradScaler's "
            f"({names} is in scope): a resumed run restarts at scale 65536 and skips steps until it backs off again. "
            f"Save `{scalers[0]}.state_dict()` with it"
        )
        return self.violation(event.call, message, fix=self._save_fix(event, checkpoint, scalers, optimizer_keys))

    def _save_fix(self, event: Event, checkpoint: _Checkpoint, scalers: list[str], optimizer_keys: list[str | None]) -> Fix | NoFix:
        if len(scalers) != 1:
            return NoFix("several scalers are in scope")
        scaler = scalers[0]
        if self._maybe_none(scaler, event.ctx):
            return NoFix(f"`{scaler}` may be None here")
        if (self._scaler_order(scaler, event.ctx) or 0) > event.order:
            return NoFix(f"`{scaler}` is created after this save")
        styled = _styled_key(next((k for k in optimizer_keys if k), None))
        keys = _key_nodes(checkpoint.items)
        q = _quote(keys[0] if keys else None)
        value = cst.parse_expression(f"{scaler}.state_dict()")
        message = f'Add "{styled}": {scaler}.state_dict() to the checkpoint'
        container = checkpoint.container
        subscript_optimizer = [stmt for key, stmt in checkpoint.subscript_stmts if key and "optim" in key.lower()]
        if subscript_optimizer and checkpoint.variable is not None:
            stmt = subscript_optimizer[-1]
            if isinstance(stmt, cst.SimpleStatementLine) and self.facts.statement_block(stmt) is not None:
                subscripts = [a for a in self.facts.assignments if a.node is not None and a.ctx.stmt is stmt]
                target = subscripts[0].node.targets[0].target if subscripts and isinstance(subscripts[0].node, cst.Assign) else None
                q = _quote(target.slice[0].slice.value) if isinstance(target, cst.Subscript) and isinstance(target.slice[0].slice, cst.Index) else q
                new = cst.parse_statement(f'{checkpoint.variable}[{q}{styled}{q}] = {scaler}.state_dict()\n')
                return Fix.safe(message, {stmt: cst.FlattenSentinel([stmt, new])})
            return NoFix("the checkpoint is built in a statement the fix cannot extend")
        if isinstance(container, cst.Dict):
            return Fix.safe(message, {container: self._append_element(container, f"{q}{styled}{q}", value)})
        if isinstance(container, cst.Call):
            if not styled.isidentifier():
                return NoFix("the key is not a valid keyword")
            return Fix.safe(message, {container: E.insert_arg(container, len(container.args), E.keyword(styled, value))})
        return NoFix("the checkpoint dict is not visible here")

    @staticmethod
    def _append_element(node: cst.Dict, key: str, value: cst.BaseExpression) -> cst.Dict:
        elements = list(node.elements)
        new = cst.DictElement(key=cst.SimpleString(key), value=value)
        if not elements:
            return node.with_changes(elements=[new])
        last = elements[-1]
        if len(elements) > 1 and isinstance(elements[-2].comma, cst.Comma):
            between = elements[-2].comma
        elif isinstance(node.lbrace.whitespace_after, cst.ParenthesizedWhitespace):
            between = cst.Comma(whitespace_after=node.lbrace.whitespace_after)
        else:
            between = cst.Comma(whitespace_after=E.ONE_SPACE)
        elements[-1] = last.with_changes(comma=between)
        elements.append(new.with_changes(comma=last.comma))
        return node.with_changes(elements=elements)

    # -- load side
    def _check_load(self, event: Event, loads: list[Event]) -> Violation | None:
        facts = self.facts
        receiver = event.receiver
        if receiver is None or facts.is_scaler(receiver):
            return None
        if not (event.optimizer is not None or API.is_optimizer_name(receiver)):
            return None
        scalers = self._scalers_in_scope(event.ctx)
        if not scalers:
            return None
        own = facts.function_of(event.ctx.scope)
        for other in loads:
            if other.receiver is None or not facts.is_scaler(other.receiver) or other.receiver not in scalers:
                continue
            if other.ctx.scope is event.ctx.scope:
                return None
            if other.receiver.startswith("self.") and own is not None:
                fn = facts.function_of(other.ctx.scope)
                if fn is not None and fn.class_name == own.class_name:
                    return None
        # The scaler handed to a loader / resume helper, or restored some other way.
        for site in facts.calls:
            if site.ctx.scope is not event.ctx.scope:
                continue
            last = (site.func_text or "").rsplit(".", 1)[-1].lower()
            if any(w in last for w in _LOADER_WORDS) and self._mentions_scaler_args(site.node, scalers):
                return None
        names = ", ".join(f"`{s}`" for s in scalers)
        message = (
            f"The optimizer state is restored here but the GradScaler's is not ({names} is in scope and "
            "`load_state_dict` is never called on it): the resumed run restarts at scale 65536 and skips steps"
        )
        return self.violation(event.call, message, fix=self._load_fix(event, scalers))

    def _mentions_scaler_args(self, call: cst.Call, scalers: list[str]) -> bool:
        return any(self._mentions_scaler(arg.value, scalers) for arg in call.args)

    def _saved_scaler_key(self, scaler: str, optimizer_key: str) -> str | None:
        """The literal key under which this file saves ``scaler``'s state next to ``optimizer_key``."""
        for event in self.facts.events:
            if event.kind != EventKind.SAVE:
                continue
            checkpoint = self._checkpoint(event)
            if checkpoint is None or not any(key == optimizer_key for key, _, _ in checkpoint.items):
                continue
            for key, value, _ in checkpoint.items:
                if key and key != "**" and self._mentions_scaler(value, [scaler]):
                    return key
        if not any(key == optimizer_key for a in self.facts.assignments for _, key in a.subscript_keys):
            return None
        for assignment in self.facts.assignments:
            for base, key in assignment.subscript_keys:
                if key and assignment.value is not None and self._mentions_scaler(assignment.value, [scaler]) and "scaler" in key.lower():
                    return key
        return None

    def _load_fix(self, event: Event, scalers: list[str]) -> Fix | NoFix:
        if len(scalers) != 1:
            return NoFix("several scalers are in scope")
        scaler = scalers[0]
        if self._maybe_none(scaler, event.ctx):
            return NoFix(f"`{scaler}` may be None here")
        if (self._scaler_order(scaler, event.ctx) or 0) > event.order:
            return NoFix(f"`{scaler}` is created after the optimizer is restored")
        args = S.positional_args(event.call)
        arg = args[0].value if args else S.keyword_arg_value(event.call, "state_dict")
        checkpoint, optimizer_key = None, None
        if isinstance(arg, cst.Subscript) and len(arg.slice) == 1 and isinstance(arg.slice[0].slice, cst.Index):
            checkpoint = S.dotted(arg.value)
            optimizer_key = S.string_value(arg.slice[0].slice.value)
        if checkpoint is None or optimizer_key is None:
            return NoFix("the checkpoint the optimizer state comes from is not a `ckpt[\"key\"]` lookup")
        stmt = event.ctx.stmt
        if not isinstance(stmt, cst.SimpleStatementLine) or self.facts.statement_block(stmt) is None:
            return NoFix("the optimizer is restored in a statement the fix cannot follow")
        key = self._saved_scaler_key(scaler, optimizer_key) or _styled_key(optimizer_key)
        q = _quote(arg.slice[0].slice.value)
        new = cst.parse_statement(f"if {q}{key}{q} in {checkpoint}:\n    {scaler}.load_state_dict({checkpoint}[{q}{key}{q}])\n")
        message = f'Restore `{scaler}` from {checkpoint}["{key}"] after the optimizer'
        return Fix.safe(message, {stmt: cst.FlattenSentinel([stmt, new])})
