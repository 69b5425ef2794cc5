"""A module's summary from the standard library's ``ast``: cheap enough for every file of a project.

Read as the code shows it, by names and shapes: ``torch.save(obj, ...)`` with ``obj`` a dict
display, ``dict(...)``, ``asdict(snapshot)``, a dict variable completed key by key, or a
``x.state_dict()``; ``x.load_state_dict(...)``; ``scaler.scale(loss).backward()``;
``scaler.unscale_``, ``clip_grad_norm_``, ``.step()``, ``.update()``; ``GradScaler(...)``; and
``model.half()`` / ``.to(torch.float16)``. A parameter is an optimizer or a scaler by its name or
by how the body uses it.
"""

from __future__ import annotations

import ast

from amplint.project.imports import imports_of
from amplint.project.quiet_parse import parse
from amplint.project.records import FunctionSummary, ModuleSummary, SavedCheckpoint
from amplint.sourcefile import source_lines

_SCALER_CLASSES = ("GradScaler", "ShardedGradScaler")
_HALF_DTYPES = ("float16", "half", "bfloat16")
_CLIP_NAMES = ("clip_grad_norm_", "clip_grad_value_", "clip_grad_norm", "clip_gradients", "clip_grad")


def dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def names_scaler(text: str | None) -> bool:
    return bool(text) and "scaler" in text.rsplit(".", 1)[-1].lower()


def names_optimizer(text: str | None) -> bool:
    return bool(text) and "optim" in text.rsplit(".", 1)[-1].lower()


def key_names_scaler(key: str) -> bool:
    return "scaler" in key.lower() or key.lower() in ("amp", "amp_state")


def summarize_text(text: str) -> ModuleSummary:
    tree = parse(text)
    return summarize_tree(tree, text) if tree is not None else ModuleSummary()


# Words without which a function's body cannot change its summary (lowercase). Every call the
# summary reads is named by one: scale/unscale_/GradScaler (and a scaler's scaled backward and
# update), clip_grad*, step, half/bfloat16/float16 casts, load_state_dict, save, and a dict with
# an optim key; a parameter named like a scaler or an optimizer holds one too.
_EFFECT_WORDS = ("scale", "clip_grad", "step", "half", "float16", "load_state_dict", "save", "optim")


def summarize_tree(tree: ast.Module, text: str | None = None) -> ModuleSummary:
    """The summary of a parsed module; with ``text`` (its source), a function whose source holds
    none of the effect words is read from its signature alone, with the same result."""
    lines = source_lines(text) if text is not None else None
    functions: list[FunctionSummary] = []
    scaler_classes: list[str] = []
    defined: list[str] = []
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defined.append(statement.name)
            functions.append(_summarize_function(statement, statement.name, lines))
        elif isinstance(statement, ast.ClassDef):
            defined.append(statement.name)
            methods = [m for m in statement.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
            summaries = [_summarize_function(m, f"{statement.name}.{m.name}", lines) for m in methods]
            functions.extend(summaries)
            if any(s.constructs_scaler for s in summaries):
                scaler_classes.append(statement.name)
    return ModuleSummary(tuple(functions), tuple(imports_of(tree)), tuple(scaler_classes), tuple(defined))


# Nodes that never hold a call: not queued by :func:`calls_in`, which leaves the order of the rest as it is.
_LEAVES = (ast.Name, ast.Constant, ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.alias)


def calls_in(node: ast.AST) -> list[ast.Call]:
    """Every call under ``node`` in ``ast.walk``'s order (breadth first), without visiting the
    leaves: a module's summary walks all of it, and so does every linted file's own summary."""
    calls: list[ast.Call] = []
    queue = [node]
    for current in queue:  # grows while it is read
        if isinstance(current, ast.Call):
            calls.append(current)
        for field in current._fields:
            value = getattr(current, field, None)
            if isinstance(value, list):
                queue.extend(item for item in value if isinstance(item, ast.AST) and not isinstance(item, _LEAVES))
            elif isinstance(value, ast.AST) and not isinstance(value, _LEAVES):
                queue.append(value)
    return calls


def _summarize_function(node: ast.FunctionDef | ast.AsyncFunctionDef, name: str, lines: list[str] | None) -> FunctionSummary:
    if lines is not None:
        source = "\n".join(lines[node.lineno - 1:node.end_lineno or node.lineno])
        # Non-ASCII source may spell an identifier in a form ast normalises (NFKC): read it all.
        if source.isascii() and not any(word in source.lower() for word in _EFFECT_WORDS):
            return _FunctionReader(node, name, read_body=False).summary()
    return _FunctionReader(node, name).summary()


class _FunctionReader:
    def __init__(self, node: ast.FunctionDef | ast.AsyncFunctionDef, name: str, read_body: bool = True) -> None:
        self.node = node
        self.name = name
        args = node.args
        self.params = tuple(a.arg for a in (*args.posonlyargs, *args.args))
        self.keyword_only = tuple(a.arg for a in args.kwonlyargs)
        positional = (*args.posonlyargs, *args.args)
        with_default = positional[len(positional) - len(args.defaults):] if args.defaults else ()
        self.defaults = tuple(a.arg for a in with_default) + tuple(
            a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None
        )
        self.all_params = set(self.params) | set(self.keyword_only)
        self.calls = calls_in(node) if read_body else []
        self.flags: dict[str, bool] = {}
        self.saved_params: set[str] = set()
        self.saved_whole: set[str] = set()
        self.restored_params: set[str] = set()
        self.saves: list[SavedCheckpoint] = []
        self.scaler_params = {p for p in self.all_params if names_scaler(p)}
        self.optimizer_params = {p for p in self.all_params if names_optimizer(p)}

    # -- what a name is
    def _root(self, text: str | None) -> str | None:
        return text.split(".")[0] if text else None

    def is_scaler(self, text: str | None) -> bool:
        return names_scaler(text) or (text in self.scaler_params)

    def is_optimizer(self, text: str | None) -> bool:
        return names_optimizer(text) or (text in self.optimizer_params)

    def summary(self) -> FunctionSummary:
        for call in self.calls:
            self._learn_roles(call)
        for call in self.calls:
            self._read_call(call)
        return FunctionSummary(
            name=self.name, line=self.node.lineno, params=self.params, keyword_only=self.keyword_only,
            has_varargs=self.node.args.vararg is not None, has_varkw=self.node.args.kwarg is not None,
            defaults=self.defaults, saved_params=tuple(sorted(self.saved_params)),
            saved_whole=tuple(sorted(self.saved_whole)), restored_params=tuple(sorted(self.restored_params)),
            scaler_params=tuple(sorted(self.scaler_params)), saves=tuple(self.saves), **self.flags,
        )

    def _learn_roles(self, call: ast.Call) -> None:
        """Parameters used as a scaler (``p.scale(loss)``, ``p.unscale_(opt)``) or an optimizer (``p.zero_grad()``)."""
        if not isinstance(call.func, ast.Attribute):
            return
        receiver = dotted(call.func.value)
        if receiver not in self.all_params:
            return
        if call.func.attr in ("scale", "unscale_", "get_scale"):
            self.scaler_params.add(receiver)
        elif call.func.attr in ("zero_grad", "add_param_group"):
            self.optimizer_params.add(receiver)

    def _set(self, flag: str) -> None:
        self.flags[flag] = True

    def _read_call(self, call: ast.Call) -> None:
        func = call.func
        text = dotted(func)
        last = text.rsplit(".", 1)[-1] if text else (func.attr if isinstance(func, ast.Attribute) else None)
        receiver = dotted(func.value) if isinstance(func, ast.Attribute) else None
        if last in _SCALER_CLASSES:
            self._set("constructs_scaler")
        elif last in _CLIP_NAMES:
            self._set("clips")
        elif last == "unscale_":
            self._set("unscales")
        elif last == "backward" and isinstance(func, ast.Attribute) and self._is_scaled(func.value):
            self._set("scaled_backward")
        elif last == "step" and (self.is_scaler(receiver) or self.is_optimizer(receiver)):
            self._set("steps")
        elif last == "update" and self.is_scaler(receiver) and not call.args:
            self._set("updates")
        elif last in ("half", "bfloat16") and not call.args and receiver is not None:
            self._set("casts_model")
        elif last == "to" and any(self._half_dtype(a) for a in (*call.args, *(k.value for k in call.keywords))):
            self._set("casts_model")
        elif last == "load_state_dict" and receiver is not None:
            self._read_restore(receiver)
        elif text == "torch.save" and call.args:
            self._read_save(call)
        elif last == "save" and call.args:
            # ``accelerator.save(state, f)``, ``xm.save(...)``: a checkpoint whose keys may be anything
            self.saves.append(SavedCheckpoint(call.lineno, (), False, False, False))
        if text != "torch.save":
            self._read_handed_dicts(call)

    def _read_handed_dicts(self, call: ast.Call) -> None:
        """A dict display with an optimizer key handed to another call (``save_checkpoint({...}, is_best)``)
        is a checkpoint written elsewhere: its keys count as written."""
        for value in (*call.args, *(k.value for k in call.keywords)):
            found = _literal_items(value) if isinstance(value, ast.Dict) else None
            if found is None:
                continue
            items, complete = found
            keys = tuple(k for k, _ in items if k is not None)
            if any("optim" in k.lower() for k in keys):
                scaler = any(key_names_scaler(k) for k in keys) or any(self.is_scaler(self._state_owner(v)) for _, v in items)
                self.saves.append(SavedCheckpoint(call.lineno, keys, complete, True, scaler))

    def _is_scaled(self, node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "scale"
            and self.is_scaler(dotted(node.func.value))
        )

    @staticmethod
    def _half_dtype(node: ast.AST) -> bool:
        text = dotted(node)
        return bool(text) and text.startswith("torch.") and text.rsplit(".", 1)[-1] in _HALF_DTYPES

    def _read_restore(self, receiver: str) -> None:
        root = self._root(receiver)
        if self.is_scaler(receiver):
            self._set("restores_scaler")
        elif self.is_optimizer(receiver):
            self._set("restores_optimizer")
        if root in self.all_params:
            self.restored_params.add(root)

    # -- torch.save
    def _read_save(self, call: ast.Call) -> None:
        obj = call.args[0]
        vararg = self.node.args.vararg
        if isinstance(obj, ast.Starred):
            # ``save_on_master(*args)``: whatever the caller passes first is what is saved
            if vararg is not None and isinstance(obj.value, ast.Name) and obj.value.id == vararg.arg and not self.params:
                self.saved_whole.add("*0")
            return
        items, complete = self._items(obj, call)
        if items is None:
            # Written, but what it holds is not visible: it may hold anything.
            self.saves.append(SavedCheckpoint(call.lineno, (), False, False, False))
            return
        keys: list[str] = []
        optimizer = scaler = False
        for key, value in items:
            if key is None and value is None:
                continue
            if key is not None:
                keys.append(key)
            owner = self._state_owner(value)
            root = self._root(owner)
            if root in self.all_params:
                self.saved_params.add(root)
            if (key is not None and key_names_scaler(key)) or self.is_scaler(owner):
                scaler = True
            elif (key is not None and "optim" in key.lower()) or self.is_optimizer(owner):
                optimizer = True
        if optimizer:
            self._set("saves_optimizer")
        if scaler:
            self._set("saves_scaler")
        self.saves.append(SavedCheckpoint(call.lineno, tuple(keys), complete, optimizer, scaler))

    def _state_owner(self, value: ast.AST | None) -> str | None:
        """``x`` for ``x.state_dict()``, ``x`` for a bare name or attribute ``x``."""
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "state_dict":
            return dotted(value.func.value)
        return dotted(value) if value is not None else None

    def _items(self, obj: ast.AST, call: ast.Call) -> tuple[list[tuple[str | None, ast.AST | None]] | None, bool]:
        """The (key, value) pairs ``obj`` holds and whether that list is complete."""
        direct = _literal_items(obj)
        if direct is not None:
            return direct
        if isinstance(obj, ast.Call) and isinstance(obj.func, ast.Attribute) and obj.func.attr == "state_dict":
            return [(None, obj)], True
        if isinstance(obj, ast.Call) and dotted(obj.func) in ("asdict", "dataclasses.asdict", "vars") and obj.args:
            obj = obj.args[0]
        if not isinstance(obj, ast.Name):
            return None, False
        if obj.id in self.all_params:
            self.saved_whole.add(obj.id)
            self.saved_params.add(obj.id)
            return [], False
        return self._built_items(obj.id, call)

    def _built_items(self, name: str, save: ast.Call) -> tuple[list | None, bool]:
        """A dict (or a dataclass instance) built in a variable before the save, completed key by key."""
        items: list[tuple[str | None, ast.AST | None]] = []
        complete = True
        built = False
        for node in ast.walk(self.node):
            if isinstance(node, ast.Assign) and node.lineno <= save.lineno:
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id == name:
                        found, whole = _literal_items(node.value) or (None, False)
                        if found is None:
                            found, whole = _constructor_items(node.value)
                        if found is None:
                            return None, False
                        built = True
                        items.extend(found)
                        complete = complete and whole
                    elif isinstance(target, ast.Subscript) and dotted(target.value) == name:
                        key = target.slice.value if isinstance(target.slice, ast.Constant) else None
                        items.append((key if isinstance(key, str) else None, node.value))
                        complete = complete and isinstance(key, str)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and dotted(node.func.value) == name:
                if node.func.attr == "update":
                    for arg in node.args:
                        found, whole = _literal_items(arg) or ([], False)
                        items.extend(found)
                        complete = complete and whole
                    items.extend((k.arg, k.value) for k in node.keywords if k.arg)
                    complete = complete and all(k.arg for k in node.keywords)
        return (items, complete) if built else (None, False)


def _literal_items(node: ast.AST) -> tuple[list[tuple[str | None, ast.AST | None]], bool] | None:
    """A dict display's or ``dict(...)`` call's items; ``None`` for anything else."""
    if isinstance(node, ast.Dict):
        items = []
        complete = True
        for key, value in zip(node.keys, node.values):
            literal = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
            complete = complete and literal is not None
            items.append((literal, value))
        return items, complete
    if isinstance(node, ast.Call) and dotted(node.func) == "dict" and not node.args:
        return [(k.arg, k.value) for k in node.keywords], all(k.arg for k in node.keywords)
    return None


def _constructor_items(node: ast.AST) -> tuple[list | None, bool]:
    """``Snapshot(model_state=..., optimizer_state=...)``: a record built from keywords."""
    if isinstance(node, ast.Call) and dotted(node.func) and not node.args and node.keywords:
        return [(k.arg, k.value) for k in node.keywords], all(k.arg for k in node.keywords)
    return None, False
