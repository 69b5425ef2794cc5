from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import libcst as cst

from amplint.fix import edits as E
from amplint.amp import catalogue as API
from amplint.semantic import syntax as S
from amplint.semantic import ImportRecord, Reference
from amplint.fix import Fix, NoFix
from amplint.model import FixSafety
from amplint.rules.base import Invalid, Rule, Violation

# canonical deprecated name -> (device, member of torch.amp, minimum torch version)
_MEMBERS = {
    "torch.cuda.amp.autocast": ("cuda", "autocast", None),
    "torch.cpu.amp.autocast": ("cpu", "autocast", None),
    "torch.cuda.amp.GradScaler": ("cuda", "GradScaler", (2, 3)),
    "torch.cpu.amp.GradScaler": ("cpu", "GradScaler", (2, 3)),
    "torch.cuda.amp.custom_fwd": ("cuda", "custom_fwd", (2, 4)),
    "torch.cuda.amp.custom_bwd": ("cuda", "custom_bwd", (2, 4)),
}
# legacy torch.* function -> (replacement, device argument, minimum torch version)
_LEGACY = {
    "torch.get_autocast_gpu_dtype": ("get_autocast_dtype", "cuda", (2, 4)),
    "torch.set_autocast_gpu_dtype": ("set_autocast_dtype", "cuda", (2, 4)),
    "torch.get_autocast_cpu_dtype": ("get_autocast_dtype", "cpu", (2, 4)),
    "torch.set_autocast_cpu_dtype": ("set_autocast_dtype", "cpu", (2, 4)),
    "torch.is_autocast_cpu_enabled": ("is_autocast_enabled", "cpu", (2, 4)),
    "torch.set_autocast_cpu_enabled": ("set_autocast_enabled", "cpu", (2, 4)),
}
_OLD_AUTOCAST_PARAMS = ("enabled", "dtype", "cache_enabled")
_DEPRECATED_MODULES = ("torch.cuda.amp", "torch.cpu.amp")


_NEW_API = frozenset(
    {"torch.amp.autocast", "torch.amp.GradScaler", "torch.amp.custom_fwd", "torch.amp.custom_bwd",
     "torch.get_autocast_dtype", "torch.set_autocast_dtype", "torch.set_autocast_enabled", "torch.is_autocast_enabled"}
)


def _is_new_api(qualname: str) -> bool:
    return qualname in _NEW_API


def _new_spelling(qualname: str) -> str:
    if qualname in _LEGACY:
        replacement, device, _ = _LEGACY[qualname]
        value = {"set_autocast_dtype": ", dtype", "set_autocast_enabled": ", enabled"}.get(replacement, "")
        return f'torch.{replacement}("{device}"{value})'
    device, member, _ = _MEMBERS[qualname]
    if member in ("custom_fwd", "custom_bwd"):
        return f'torch.amp.{member}(device_type="{device}")'
    return f'torch.amp.{member}("{device}", ...)'


@dataclass
class _Use:
    ref: Reference
    qualname: str
    replacement: cst.CSTNode | None = None  # new node for ``target``
    target: cst.CSTNode | None = None  # the node replaced (call, decorator or reference)
    reason: str | None = None  # why this use cannot be rewritten


@dataclass
class _Group:
    """Uses that must be rewritten together because they share one import binding."""

    key: str
    uses: list[_Use] = field(default_factory=list)
    import_changes: dict = field(default_factory=dict)
    blocked: str | None = None
    record: ImportRecord | None = None


class DeprecatedAmpApi(Rule):
    """
    ## What it does
    Finds the deprecated `torch.cuda.amp` and `torch.cpu.amp` APIs (`autocast`, `GradScaler`,
    `custom_fwd`, `custom_bwd`) in every import and attribute form, and the legacy
    `torch.get/set_autocast_{gpu,cpu}_dtype` and `torch.is/set_autocast_cpu_enabled` functions.

    ## Why is this bad?
    These names emit a `FutureWarning` each time they are called or applied and will be removed.
    Their replacements in `torch.amp` take the device type explicitly. A hand migration is easy to
    get wrong: `torch.amp.autocast("cuda", True)` binds `True` to `dtype` and fails when the block
    is entered, and `torch.amp.GradScaler(2.**10)` makes `1024.0` the device.

    ## Example
    ```python
    import torch
    from torch.cuda.amp import GradScaler

    scaler = GradScaler()
    with torch.cuda.amp.autocast(True, torch.float16):
        pass
    ```

    ## Use instead
    ```python
    import torch
    from torch.amp import GradScaler

    scaler = GradScaler("cuda")
    with torch.amp.autocast("cuda", enabled=True, dtype=torch.float16):
        pass
    ```

    ## Fix safety
    The fix is safe: it inserts the device type the old class hard-coded and turns positional
    `autocast` arguments into keywords, so behaviour is unchanged. An import is rewritten only when
    every use of the imported name is rewritten; calls with `*args`/`**kwargs` to `autocast` and
    uses other than a call or decorator (`isinstance(x, autocast)`, `ctx = autocast`) are reported
    without a fix. With `target-torch` below 2.3 `GradScaler` is not rewritten, below 2.4
    `custom_fwd`/`custom_bwd` and the legacy functions are not rewritten. The new `autocast`'s
    `dtype=None` and `cache_enabled=None` defaults inherit the surrounding autocast state where the
    old classes hard-coded fp16/bf16 and `True`; outside any other autocast region this is the same.

    ## References
    - [Automatic Mixed Precision package - torch.amp](https://pytorch.org/docs/stable/amp.html)
    - [torch.amp.GradScaler](https://pytorch.org/docs/stable/amp.html#gradient-scaling)
    """

    code = "AMP001"
    name = "deprecated-amp-api"
    summary = "Deprecated `torch.cuda.amp` / `torch.cpu.amp` API"
    fix_safety = FixSafety.SAFE
    # ".amp" covers torch.cuda.amp in every dotted form; "import amp" covers
    # ``from torch.cuda import amp``; the legacy functions all contain "autocast".
    triggers = (".amp", "import amp", "autocast", "GradScaler", "custom_fwd", "custom_bwd")

    valid = (
        "import torch\nwith torch.amp.autocast('cuda'):\n    pass\n",
        "from torch.amp import autocast, GradScaler\nscaler = GradScaler('cuda')\nwith autocast('cuda'):\n    pass\n",
        "def autocast():\n    pass\nwith autocast():\n    pass\n",
        "import apex.amp as amp\nmodel, opt = amp.initialize(model, opt)\n",
        "# torch.cuda.amp.autocast() is deprecated\ntext = 'torch.cuda.amp.autocast()'\n",
    )
    invalid = (
        Invalid(
            "import torch\nwith torch.cuda.amp.autocast():\n    pass\n",
            fixed='import torch\nwith torch.amp.autocast("cuda"):\n    pass\n',
        ),
        Invalid(
            "from torch.cuda.amp import autocast\nwith autocast(enabled=False):\n    pass\n",
            fixed='from torch.amp import autocast\nwith autocast("cuda", enabled=False):\n    pass\n',
        ),
        Invalid(
            "from torch.cuda import amp\nscaler = amp.GradScaler(2.**10)\n",
            fixed='from torch import amp\nscaler = amp.GradScaler("cuda", 2.**10)\n',
        ),
        Invalid("from torch.cuda.amp import autocast\nctx = autocast if amp else nullcontext\n"),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        uses = [
            _Use(ref, qualname)
            for ref, qualname in facts.references_to(lambda q: q in _MEMBERS or q in _LEGACY)
            # Code that already prefers torch.amp and keeps the old name for old torch is right.
            if not facts.is_compat_fallback(ref.node, ref.ctx, _is_new_api)
        ]
        if not uses:
            return
        groups: dict[str, _Group] = {}
        for use in uses:
            self._plan_use(use)
            group_key, import_record = self._group_of(use)
            group = groups.setdefault(group_key, _Group(group_key))
            group.uses.append(use)
            if import_record is not None and group.record is None:
                group.record = import_record
                self._plan_import(group, import_record, use.ref.parts[0])
        for group in groups.values():
            self._check_whole_binding(group)
            yield from self._report(group)

    # -- planning one use
    def _target_version_blocks(self, minimum: tuple[int, int] | None) -> str | None:
        target = getattr(self.facts.settings, "target_torch", None)
        if minimum is not None and target is not None and target < minimum:
            return f"the replacement needs torch >= {minimum[0]}.{minimum[1]} (target-torch is {target[0]}.{target[1]})"
        return None

    def _plan_use(self, use: _Use) -> None:
        ref, qualname = use.ref, use.qualname
        if qualname in _LEGACY:
            replacement_name, device, minimum = _LEGACY[qualname]
            use.reason = self._target_version_blocks(minimum)
            if use.reason:
                return
            if not isinstance(ref.node, cst.Attribute) or ref.role != "call":
                use.reason = "only `torch.<function>(...)` calls are rewritten automatically"
                return
            call = ref.parent
            assert isinstance(call, cst.Call)
            new_func = ref.node.with_changes(attr=cst.Name(replacement_name))
            use.target = call
            use.replacement = E.insert_arg(call.with_changes(func=new_func), 0, E.positional(E.string_literal(device)))
            return
        device, member, minimum = _MEMBERS[qualname]
        use.reason = self._target_version_blocks(minimum)
        if use.reason:
            return
        new_ref = self._rewritten_reference(ref)
        if ref.role == "call":
            call = ref.parent
            assert isinstance(call, cst.Call)
            use.target = call
            use.replacement = self._rewrite_call(call, new_ref, device, member, use)
        elif ref.role == "decorator" and member in ("custom_fwd", "custom_bwd"):
            decorator = ref.parent
            assert isinstance(decorator, cst.Decorator)
            use.target = decorator
            use.replacement = decorator.with_changes(
                decorator=cst.Call(func=new_ref, args=[E.keyword("device_type", E.string_literal(device))])
            )
        elif ref.role == "decorator":
            use.reason = "a bare `@autocast` decorator is already broken; write `@torch.amp.autocast(\"cuda\")`"
        else:
            use.reason = "used as a value, not called: rewrite this use by hand"

    def _rewritten_reference(self, ref: Reference) -> cst.BaseExpression:
        """The callee spelled through ``torch.amp`` when written through ``torch``; else unchanged."""
        head_target = self.facts.lookup(ref.parts[0], ref.ctx.scope)
        if head_target == "torch" and len(ref.parts) >= 4 and ref.parts[1] in ("cuda", "cpu"):
            head = ref.node
            while isinstance(head, cst.Attribute):
                head = head.value
            return E.attribute_chain(head, "amp", ref.parts[-1])
        return ref.node  # type: ignore[return-value]

    def _rewrite_call(self, call: cst.Call, new_func, device: str, member: str, use: _Use) -> cst.Call | None:
        if member == "autocast":
            if S.has_star_args(call):
                use.reason = "`*args`/`**kwargs` hide which argument is which"
                return None
            positionals = S.positional_args(call)
            if len(positionals) > len(_OLD_AUTOCAST_PARAMS):
                use.reason = "too many positional arguments for autocast"
                return None
            args = []
            for arg in call.args:
                if arg in positionals:
                    args.append(E.keywordize(arg, _OLD_AUTOCAST_PARAMS[positionals.index(arg)]))
                else:
                    args.append(arg)
            new_call = call.with_changes(func=new_func, args=args)
            return E.insert_arg(new_call, 0, E.positional(E.string_literal(device)))
        if member == "GradScaler":
            return E.insert_arg(call.with_changes(func=new_func), 0, E.positional(E.string_literal(device)))
        # custom_fwd / custom_bwd called: as a decorator factory or on a function
        if S.keyword_arg(call, "device_type") is not None:
            return call.with_changes(func=new_func)
        index = E.first_keyword_index(call)
        return E.insert_arg(call.with_changes(func=new_func), index, E.keyword("device_type", E.string_literal(device)))

    # -- grouping uses by the import that binds them
    def _group_of(self, use: _Use) -> tuple[str, ImportRecord | None]:
        binding = self.facts.import_binding(use.ref.parts[0], use.ref.ctx.scope)
        if binding is None:
            return f"use:{id(use.ref.node)}", None
        record, alias, target = binding
        if target == "torch":  # spelled out through torch: nothing but the call changes
            return f"use:{id(use.ref.node)}", None
        if isinstance(record.node, cst.ImportFrom):
            # The whole statement is rewritten at once, so all its names form one group.
            return f"importstmt:{id(record.node)}", record
        return f"import:{id(alias)}", record

    def _plan_import(self, group: _Group, record: ImportRecord, bound: str) -> None:
        """How the import binding ``bound`` is rewritten to point at ``torch.amp``."""
        node = record.node
        alias = next(a for a, name, _ in record.aliases if name == bound)
        if isinstance(node, cst.Import):
            full = S.module_name(alias.name)
            new_module = self._new_module(full)
            if new_module is None or alias.asname is None:
                group.blocked = f"rewrite `import {full}` by hand"
                return
            group.import_changes[alias] = alias.with_changes(name=E.dotted_expression(new_module))
            return
        if node.relative:
            group.blocked = "relative import"
            return
        module = S.module_name(node.module)
        member = S.module_name(alias.name)
        new_module = self._new_module(f"{module}.{member}")
        if new_module is None:
            group.blocked = f"rewrite `from {module} import {member}` by hand"
            return
        new_parent, _, new_member = new_module.rpartition(".")
        if isinstance(node.names, cst.ImportStar):
            group.blocked = "star import"
            return
        if len(node.names) == 1 or all(self._new_module(f"{module}.{S.module_name(a.name)}") is not None for a in node.names):
            parents = {self._new_module(f"{module}.{S.module_name(a.name)}").rpartition(".")[0] for a in node.names}  # type: ignore[union-attr]
            if parents == {new_parent}:
                changes = {node: node.with_changes(module=E.dotted_expression(new_parent))}
                if new_member != member:
                    changes = {node: node.with_changes(
                        module=E.dotted_expression(new_parent),
                        names=[a.with_changes(name=cst.Name(new_member)) if a is alias else a for a in node.names],
                    )}
                group.import_changes.update(changes)
                return
        group.blocked = f"`from {module} import ...` also imports other names: split the import by hand"

    def _new_module(self, dotted_name: str) -> str | None:
        """``torch.cuda.amp.autocast_mode.autocast`` -> ``torch.amp.autocast``; ``torch.cuda.amp`` -> ``torch.amp``."""
        canonical = API.canonical(dotted_name)
        if canonical in _MEMBERS:
            return f"torch.amp.{_MEMBERS[canonical][1]}"
        if canonical in _DEPRECATED_MODULES:
            return "torch.amp"
        return None

    def _check_whole_binding(self, group: _Group) -> None:
        """An import may change only if every reference through each of its names is rewritten too."""
        if not group.import_changes or group.record is None:
            return
        record = group.record
        planned = {id(use.ref.node) for use in group.uses}
        bound_names = {name for _, name, _ in record.aliases}
        for ref in self.facts.references:
            name = ref.parts[0]
            if name not in bound_names or id(ref.node) in planned:
                continue
            binding = self.facts.import_binding(name, ref.ctx.scope)
            if binding is None or binding[0] is not record:
                continue
            row = self.facts.position(ref.node).start.line
            group.blocked = f"`{name}` is also used on line {row} in a way that is not rewritten"
            return

    # -- reporting
    def _report(self, group: _Group) -> Iterator[Violation]:
        unfixable = [use for use in group.uses if use.replacement is None]
        blocked = group.blocked
        if blocked is None and unfixable and group.import_changes:
            row = self.facts.position(unfixable[0].ref.node).start.line
            blocked = f"another use of the same import (line {row}) cannot be rewritten"
        fix: Fix | None = None
        if blocked is None and not unfixable:
            changes: dict = dict(group.import_changes)
            for use in group.uses:
                changes[use.target] = use.replacement
            new = _new_spelling(group.uses[0].qualname)
            fix = Fix.safe(f"Rewrite to `{new.split('(')[0]}`", changes, group=group.key)
        for use in group.uses:
            message = f"`{use.qualname}` is deprecated; use `{_new_spelling(use.qualname)}`"
            yield self.violation(use.ref.node, message, fix=fix or NoFix(f"no fix: {use.reason or blocked}"))
