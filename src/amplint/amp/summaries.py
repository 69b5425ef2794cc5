"""Function summaries from the facts: what each function of a module does, in AMP terms.

One :class:`~amplint.project.records.FunctionSummary` per top-level function and per method of a
top-level class, read from the same call sites and assignments the rules ask about: whether it
unscales, clips, steps, updates a scaler, backpropagates a scaled loss, builds a GradScaler or casts
a model to half precision; which of its parameters reach ``torch.save`` or have their state
restored; and what each ``torch.save`` writes (a dict display, ``dict(...)``, ``asdict(snapshot)``,
a dict variable completed key by key, or ``x.state_dict()``). A parameter is a scaler or an
optimizer by its name or by how the body uses it.

The definitions themselves (names, signatures, imports) come from the module's
:class:`~amplint.project.outline.Outline`: a definition the focused parse blanked holds none of
the calls a summary records, so its summary is its signature alone.
"""

from __future__ import annotations

import unicodedata

import libcst as cst

from amplint.amp.autocast_helpers import helper_autocast
from amplint.amp.checkpoint_libraries import library_subclasses
from amplint.amp.checkpoint_shapes import RECORD_TO_DICT, names_optimizer_state, names_scaler_state
import amplint.semantic.syntax as S
from amplint.project.outline import Outline, Signature
from amplint.project.records import FunctionSummary, ModuleSummary, SavedCheckpoint

SCALER_CLASSES = ("GradScaler", "ShardedGradScaler")
_HALF_DTYPES = ("float16", "half", "bfloat16")
_CLIP_NAMES = ("clip_grad_norm_", "clip_grad_value_", "clip_grad_norm", "clip_gradients", "clip_grad")


def _identifier(name: str) -> str:
    """A name as Python reads it: identifiers are NFKC-normalised (a fullwidth ``Ｇ`` is ``G``)."""
    return name if name.isascii() else unicodedata.normalize("NFKC", name)


def _dotted(node: cst.CSTNode | None) -> str | None:
    text = S.dotted(node)
    return _identifier(text) if text is not None else None


def names_scaler(text: str | None) -> bool:
    return bool(text) and "scaler" in text.rsplit(".", 1)[-1].lower()


def names_optimizer(text: str | None) -> bool:
    return bool(text) and "optim" in text.rsplit(".", 1)[-1].lower()


def module_summary(facts, outline: Outline) -> ModuleSummary:
    """The summary of the module ``facts`` were built for; ``outline`` is its whole text's outline."""
    parsed = _parsed_functions(facts, outline)
    functions = [_Reader(facts, signature, parsed.get((signature.name, signature.line))).summary()
                 for signature in outline.signatures]
    by_name = {function.name: function for function in functions}
    scaler_classes = tuple(
        name for name, methods in outline.classes if any(by_name[m].constructs_scaler for m in methods if m in by_name)
    )
    functions.extend(library_subclasses(facts, dict(outline.classes), by_name))
    return ModuleSummary(tuple(functions), outline.imports, scaler_classes, outline.defined)


def signature_summaries(outline: Outline, names: frozenset[str]) -> tuple[FunctionSummary, ...]:
    """The summaries of the functions and methods of the top-level definitions ``names`` where the
    focused parse blanked them whole: their signatures alone."""
    return tuple(_Reader(None, signature, None).summary() for signature in outline.signatures
                 if signature.name.split(".", 1)[0] in names)


def nested_function_summary(facts, function) -> FunctionSummary:
    """The summary of a function defined inside another function (``def save_ckp(state, path)``
    nested in ``main()``), which no outline lists: its signature is read from its own ``def``."""
    node = function.node
    parameters = node.params
    positional = (*parameters.posonly_params, *parameters.params)
    star = parameters.star_arg
    signature = Signature(
        name=_identifier(node.name.value), line=facts.position(node.name).start.line,
        params=tuple(_identifier(p.name.value) for p in positional),
        keyword_only=tuple(_identifier(p.name.value) for p in parameters.kwonly_params),
        vararg=_identifier(star.name.value) if isinstance(star, cst.Param) else None,
        varkw=_identifier(parameters.star_kwarg.name.value) if isinstance(parameters.star_kwarg, cst.Param) else None,
        defaults=tuple(_identifier(p.name.value) for p in (*positional, *parameters.kwonly_params) if p.default is not None),
    )
    return _Reader(facts, signature, function).summary()


def _parsed_functions(facts, outline: Outline) -> dict[tuple[str, int], object]:
    """``(qualified name, line of the def)`` -> FunctionInfo, for the functions a summary covers.

    Matched by name where the name is defined once (positions cost a pass over the module), by
    the line of the ``def`` where it is defined more than once (a property and its setter)."""
    by_name: dict[str, list] = {}
    for info in facts.functions:
        parent = info.scope.parent
        if parent is None:
            continue
        if parent.kind == "module":
            name = _identifier(info.node.name.value)
        elif parent.kind == "class" and parent.parent is not None and parent.parent.kind == "module":
            name = _identifier(f"{parent.name}.{info.node.name.value}")
        else:
            continue
        by_name.setdefault(name, []).append(info)
    lines: dict[str, list[int]] = {}
    for signature in outline.signatures:
        lines.setdefault(signature.name, []).append(signature.line)
    out = {}
    for name, infos in by_name.items():
        if len(infos) == 1 and len(lines.get(name, ())) == 1:
            out[(name, lines[name][0])] = infos[0]
        else:
            for info in infos:
                out[(name, facts.position(info.node.name).start.line)] = info
    return out


def _positional(call: cst.Call) -> list[cst.Arg]:
    """What Python's ``ast`` calls the positional arguments (``*args`` included)."""
    return [arg for arg in call.args if arg.keyword is None and arg.star != "**"]


def _keywords(call: cst.Call) -> list[cst.Arg]:
    return [arg for arg in call.args if arg.keyword is not None or arg.star == "**"]


def _literal_items(node: cst.CSTNode | None) -> tuple[list[tuple[str | None, cst.CSTNode | None]], bool] | None:
    """A dict display's or ``dict(...)`` call's items and whether every key is a literal; ``None``
    for anything else."""
    if isinstance(node, cst.Dict):
        items: list[tuple[str | None, cst.CSTNode | None]] = []
        complete = True
        for element in node.elements:
            key = S.string_value(element.key) if isinstance(element, cst.DictElement) else None
            complete = complete and key is not None
            items.append((key, element.value))
        return items, complete
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and _identifier(node.func.value) == "dict" and not _positional(node):
        keywords = _keywords(node)
        return [(_identifier(k.keyword.value) if k.keyword else None, k.value) for k in keywords], all(k.keyword for k in keywords)
    return None


def _constructor_items(node: cst.CSTNode | None) -> tuple[list | None, bool]:
    """``Snapshot(model_state=..., optimizer_state=...)``: a record built from keywords."""
    if isinstance(node, cst.Call) and _dotted(node.func) and not _positional(node) and _keywords(node):
        keywords = _keywords(node)
        return [(_identifier(k.keyword.value) if k.keyword else None, k.value) for k in keywords], all(k.keyword for k in keywords)
    return None, False


class _Reader:
    def __init__(self, facts, signature: Signature, function) -> None:
        self.facts = facts
        self.signature = signature
        self.function = function
        self.all_params = set(signature.params) | set(signature.keyword_only)
        self.calls = facts.calls_within(function.node) if function is not None else []
        self.flags: dict[str, bool] = {}
        self.saved_params: set[str] = set()
        self.saved_whole: set[str] = set()
        self.restored_params: set[str] = set()
        self.saves: list[tuple[int, SavedCheckpoint]] = []  # (walk order, save)
        self.scaler_params = {p for p in self.all_params if names_scaler(p)}
        self.optimizer_params = {p for p in self.all_params if names_optimizer(p)}

    def is_scaler(self, text: str | None) -> bool:
        return names_scaler(text) or (text in self.scaler_params)

    def is_optimizer(self, text: str | None) -> bool:
        return names_optimizer(text) or (text in self.optimizer_params)

    def summary(self) -> FunctionSummary:
        for site in self.calls:
            self._learn_roles(site.node)
        for site in self.calls:
            self._read_call(site.node)
        signature = self.signature
        return FunctionSummary(
            name=signature.name, line=signature.line, params=signature.params, keyword_only=signature.keyword_only,
            has_varargs=signature.vararg is not None, has_varkw=signature.varkw is not None, defaults=signature.defaults,
            saved_params=tuple(sorted(self.saved_params)), saved_whole=tuple(sorted(self.saved_whole)),
            restored_params=tuple(sorted(self.restored_params)), scaler_params=tuple(sorted(self.scaler_params)),
            saves=tuple(save for _, save in sorted(self.saves, key=lambda pair: pair[0])), **self.flags,
            autocast=helper_autocast(self.facts, self.function)
            if self.function is not None and id(self.function.scope) in self.facts.autocast.returning_scopes else None,
        )

    def _line(self, node: cst.CSTNode) -> int:
        return self.facts.position(node).start.line

    def _order(self, node: cst.CSTNode) -> int:
        return self.facts.spans[node][0]

    def _save(self, call: cst.Call, keys: tuple[str, ...], complete: bool, optimizer: bool, scaler: bool) -> None:
        self.saves.append((self._order(call), SavedCheckpoint(self._line(call), keys, complete, optimizer, scaler)))

    def _learn_roles(self, call: cst.Call) -> None:
        """Parameters used as a scaler (``p.scale(loss)``, ``p.unscale_(opt)``) or an optimizer (``p.zero_grad()``)."""
        if not isinstance(call.func, cst.Attribute):
            return
        receiver = _dotted(call.func.value)
        if receiver not in self.all_params:
            return
        if _identifier(call.func.attr.value) in ("scale", "unscale_", "get_scale"):
            self.scaler_params.add(receiver)
        elif _identifier(call.func.attr.value) in ("zero_grad", "add_param_group"):
            self.optimizer_params.add(receiver)

    def _set(self, flag: str) -> None:
        self.flags[flag] = True

    def _read_call(self, call: cst.Call) -> None:
        func = call.func
        text = _dotted(func)
        last = text.rsplit(".", 1)[-1] if text else (_identifier(func.attr.value) if isinstance(func, cst.Attribute) else None)
        receiver = _dotted(func.value) if isinstance(func, cst.Attribute) else None
        positional = _positional(call)
        if last in SCALER_CLASSES:
            self._set("constructs_scaler")
        elif last in _CLIP_NAMES:
            self._set("clips")
        elif last == "unscale_":
            self._set("unscales")
        elif last == "backward" and isinstance(func, cst.Attribute) and self._is_scaled(func.value):
            self._set("scaled_backward")
        elif last == "step" and (self.is_scaler(receiver) or self.is_optimizer(receiver)):
            self._set("steps")
        elif last == "update" and self.is_scaler(receiver) and not positional:
            self._set("updates")
        elif last in ("half", "bfloat16") and not positional and receiver is not None:
            self._set("casts_model")
        elif last == "to" and any(self._half_dtype(a.value) for a in call.args if a.star != "*"):
            self._set("casts_model")
        elif last == "load_state_dict" and receiver is not None:
            self._read_restore(receiver)
        elif text == "torch.save" and positional:
            self._read_save(call, positional[0])
        elif last == "save" and positional:
            # ``accelerator.save(state, f)``, ``xm.save(...)``: a checkpoint whose keys may be anything
            self._save(call, (), False, False, False)
        if text != "torch.save":
            self._read_handed_dicts(call)

    def _read_handed_dicts(self, call: cst.Call) -> None:
        """A dict display with an optimizer key handed to another call (``save_checkpoint({...}, is_best)``)
        is a checkpoint written elsewhere: its keys count as written."""
        for arg in call.args:
            if arg.star == "*" or not isinstance(arg.value, cst.Dict):
                continue
            items, complete = _literal_items(arg.value)  # type: ignore[misc]
            keys = tuple(k for k, _ in items if k is not None)
            if any(names_optimizer_state(k) for k in keys):
                scaler = any(names_scaler_state(k) for k in keys) or any(self.is_scaler(self._state_owner(v)) for _, v in items)
                self._save(call, keys, complete, True, scaler)

    def _is_scaled(self, node: cst.CSTNode) -> bool:
        return (
            isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and _identifier(node.func.attr.value) == "scale"
            and self.is_scaler(_dotted(node.func.value))
        )

    @staticmethod
    def _half_dtype(node: cst.CSTNode) -> bool:
        text = _dotted(node)
        return bool(text) and text.startswith("torch.") and text.rsplit(".", 1)[-1] in _HALF_DTYPES

    def _read_restore(self, receiver: str) -> None:
        root = receiver.split(".")[0]
        if self.is_scaler(receiver):
            self._set("restores_scaler")
        elif self.is_optimizer(receiver):
            self._set("restores_optimizer")
        if root in self.all_params:
            self.restored_params.add(root)

    # -- torch.save
    def _read_save(self, call: cst.Call, first: cst.Arg) -> None:
        if first.star == "*":
            # ``save_on_master(*args)``: whatever the caller passes first is what is saved
            vararg = self.signature.vararg
            if vararg is not None and isinstance(first.value, cst.Name) and _identifier(first.value.value) == vararg and not self.signature.params:
                self.saved_whole.add("*0")
            return
        items, complete = self._items(first.value, self._order(call))
        if items is None:
            # Written, but what it holds is not visible: it may hold anything.
            self._save(call, (), False, False, False)
            return
        keys: list[str] = []
        optimizer = scaler = False
        for key, value in items:
            if key is None and value is None:
                continue
            if key is not None:
                keys.append(key)
            owner = self._state_owner(value)
            root = owner.split(".")[0] if owner else None
            if root in self.all_params:
                self.saved_params.add(root)
            if names_scaler_state(key) or self.is_scaler(owner):
                scaler = True
            elif names_optimizer_state(key) or self.is_optimizer(owner):
                optimizer = True
        if optimizer:
            self._set("saves_optimizer")
        if scaler:
            self._set("saves_scaler")
        self._save(call, tuple(keys), complete, optimizer, scaler)

    @staticmethod
    def _state_owner(value: cst.CSTNode | None) -> str | None:
        """``x`` for ``x.state_dict()``, ``x`` for a bare name or attribute ``x``, and for
        ``x.state_dict() if x is not None else None`` (either arm ``None``)."""
        if isinstance(value, cst.IfExp) and S.is_none(value.orelse) != S.is_none(value.body):
            value = value.body if S.is_none(value.orelse) else value.orelse
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and _identifier(value.func.attr.value) == "state_dict":
            return _dotted(value.func.value)
        return _dotted(value) if value is not None else None

    def _items(self, obj: cst.CSTNode, save_order: int) -> tuple[list[tuple[str | None, cst.CSTNode | None]] | None, bool]:
        """The (key, value) pairs ``obj`` holds and whether that list is complete."""
        direct = _literal_items(obj)
        if direct is not None:
            return direct
        if isinstance(obj, cst.Call) and isinstance(obj.func, cst.Attribute) and _identifier(obj.func.attr.value) == "state_dict":
            return [(None, obj)], True
        if isinstance(obj, cst.Call) and _dotted(obj.func) in RECORD_TO_DICT and _positional(obj):
            first = _positional(obj)[0]
            obj = first.value if first.star != "*" else first
        if not isinstance(obj, cst.Name):
            return None, False
        name = _identifier(obj.value)
        if name in self.all_params:
            self.saved_whole.add(name)
            self.saved_params.add(name)
            return [], False
        return self._built_items(name, save_order)

    def _built_items(self, name: str, save_order: int) -> tuple[list | None, bool]:
        """A dict (or a dataclass instance) built in a variable before the save, completed key by key."""
        items: list[tuple[str | None, cst.CSTNode | None]] = []
        complete = True
        built = False
        for assign in self._assignments():
            if self._order(assign) > save_order:
                continue  # written after the save
            for target in (t.target for t in assign.targets):
                if isinstance(target, cst.Name) and _identifier(target.value) == name:
                    found, whole = _literal_items(assign.value) or (None, False)
                    if found is None:
                        found, whole = _constructor_items(assign.value)
                    if found is None:
                        return None, False
                    built = True
                    items.extend(found)
                    complete = complete and whole
                elif isinstance(target, cst.Subscript) and _dotted(target.value) == name:
                    key = _literal_subscript(target)
                    items.append((key, assign.value))
                    complete = complete and key is not None
        for site in self.calls:
            func = site.node.func
            if isinstance(func, cst.Attribute) and _identifier(func.attr.value) == "update" and _dotted(func.value) == name:
                for arg in _positional(site.node):
                    found, whole = (_literal_items(arg.value) if arg.star != "*" else None) or ([], False)
                    items.extend(found)
                    complete = complete and whole
                keywords = _keywords(site.node)
                items.extend((_identifier(k.keyword.value), k.value) for k in keywords if k.keyword)
                complete = complete and all(k.keyword for k in keywords)
        return (items, complete) if built else (None, False)

    def _assignments(self) -> list[cst.Assign]:
        """The plain assignments (``x = ...``) inside the function, nested scopes included."""
        within = self.facts.tree.within
        node = self.function.node
        return [a.node for a in self.facts.assignments if isinstance(a.node, cst.Assign) and within(a.node, node)]

def _literal_subscript(target: cst.Subscript) -> str | None:
    """``"k"`` of ``d["k"]``; ``None`` for any other subscript."""
    if len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
        return None
    return S.string_value(target.slice[0].slice.value)
