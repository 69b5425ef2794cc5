from __future__ import annotations

from dataclasses import dataclass, field
from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.amp.autocast_inheritance import inherited_autocast_setting
from amplint.amp.compat import DEPRECATED_API, DeprecatedImport, torch_amp_location
from amplint.fix import Fix, NoFix
import amplint.fix.edits as E
from amplint.fix.imports import ImportRewrite, rewrite_group, rewrite_import
from amplint.fix.torch_amp_calls import rewrite_call
from amplint.model import FixSafety
from amplint.rules.base import Invalid, Rule, Violation
from amplint.semantic import ImportRecord, Reference


@dataclass
class _Use:
    ref: Reference
    qualname: str
    replacement: cst.CSTNode | None = None  # new node for ``target``
    target: cst.CSTNode | None = None  # the node replaced (call, decorator or reference)
    reason: str | None = None  # why this use cannot be rewritten
    inherits_from: int | None = None  # line of the region whose dtype/cache the new autocast would take


@dataclass
class _Group:
    """Uses that must be rewritten together because they share one import binding."""

    key: str
    uses: list[_Use] = field(default_factory=list)
    rewrite: ImportRewrite = field(default_factory=ImportRewrite)
    record: ImportRecord | None = None
    # ``hasattr(torch.cuda.amp, "custom_fwd")`` -> ``hasattr(torch.amp, "custom_fwd")`` for the
    # guard around the uses, so that it asks for the API its body now uses.
    guard_edits: dict = field(default_factory=dict)


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

    Annotations count as uses (`scaler: Optional[torch.cuda.amp.GradScaler]`, `-> amp.GradScaler`).
    A name the file never binds but a `from pkg.mod import *` of the project does (`torch`, bound
    in `pkg/mod.py` by `import torch`) is read as that module binds it; when that module cannot
    show it (its `__all__` is not a literal list, it star-imports in turn, it binds the name
    otherwise too, or it is not a module of the project), nothing is reported.
    An import whose names no reported use points back to is reported itself: a name that is not used
    in the file (a re-export), or that is also bound by a stand-in (`class GradScaler: ...` in the
    `except` arm, `GradScaler = None` in the `else` of a version gate). Code that keeps the old name
    only where the new one is missing is left alone: the arm of a `try` that uses or imports the
    `torch.amp` name which catches a missing API (`except (ImportError, AttributeError, TypeError)`,
    `except Exception` or a bare `except`); the branch of an `if`/`elif` chain or conditional
    expression whose other branch uses the new name, when one of the chain's tests asks which torch
    this is (`hasattr` on `torch` or one of its modules, `torch.__version__`, a version comparison
    or a name that says it is one, `TORCH_2_4`, `is_torch_version(...)`, or a name this file assigns
    from such a test); and the branch an `if hasattr(torch.amp, "GradScaler")` (or
    `if not hasattr(...)`) takes when the name is missing. An arm of a device or precision dispatch
    (`if t.device.type == "cpu":`, `if torch.cuda.is_available():`, `if precision == "fp16":`) is
    reported even when another arm uses the new name: every arm of it runs on a current torch, and
    so does the `except RuntimeError:` retry of a `try`.

    ## Fix safety
    The fix is safe (but see a nested `autocast`, below): it inserts the device type the old class
    hard-coded and turns positional `autocast` arguments into keywords, so behaviour is unchanged.
    An import is rewritten only when
    every use of the imported name is rewritten; calls with `*args`/`**kwargs` to `autocast` and
    uses other than a call, a decorator or an annotation (`isinstance(x, autocast)`, `ctx = autocast`)
    are reported without a fix, and so are reported imports and uses of a name other than
    `torch` that a star import binds (its import is in the other module). An annotation is rewritten to the `torch.amp`
    class, which the old class subclasses, so every value it allowed is still allowed. A guard that asks
    for the old name (`if hasattr(torch.cuda.amp, "custom_fwd"):`, `hasattr(torch, "get_autocast_gpu_dtype")`)
    is rewritten in the same fix as the uses it guards, so that it asks for the new name; when one of
    those uses cannot be rewritten, neither the guard nor the others are. An import whose
    `except ImportError` arm binds `None` in its place (`try: from torch.cuda import amp` /
    `except ImportError: amp = None`) is rewritten with all its uses, the stand-in kept: the arm then
    catches the new import failing. Its names may be used only as rewritable calls, decorators or
    annotations and in `is None` tests; a stub class in the arm, or any other use, leaves it to be
    changed by hand. With `target-torch` (set,
    or inferred from the project's `torch>=` requirement) below 2.3 `GradScaler` is not rewritten, below 2.4
    `custom_fwd`/`custom_bwd` and the legacy functions are not rewritten.

    The new `autocast`'s `dtype=None` and `cache_enabled=None` defaults inherit the autocast state
    it is built in, where the old classes hard-coded float16 (CUDA) / bfloat16 (CPU) and `True`;
    outside any other autocast region this is the same. An `autocast` call without `dtype` (or
    `cache_enabled`) inside another region of this file whose dtype (or cache) may differ from the
    old default (`with torch.autocast("cuda", dtype=torch.bfloat16):` around
    `with torch.cuda.amp.autocast():`) makes the fix unsafe: the inner region would switch from
    float16 to bfloat16. That holds for an outer region built with `enabled=False` too, which still
    sets the dtype its body inherits. A region entered by a caller, in another function or module,
    is not seen. An old `autocast(enabled=False)` island stays safe: nothing runs under autocast in
    it (only a `torch.get_autocast_dtype` call inside would read the inherited dtype).

    ## References
    - [Automatic Mixed Precision package - torch.amp](https://pytorch.org/docs/stable/amp.html)
    - [torch.amp.GradScaler](https://pytorch.org/docs/stable/amp.html#gradient-scaling)
    """

    code = "AMP001"
    name = "deprecated-amp-api"
    summary = "Deprecated `torch.cuda.amp` / `torch.cpu.amp` API"
    fix_safety = FixSafety.SOMETIMES
    fix_withheld = (
        "when an imported name has uses that are not rewritten or is bound again (other than a `None` "
        "stand-in for a failed import), for "
        "`*args`/`**kwargs`, a bare `@autocast` or a use as a value, and below the `target-torch` that "
        "has the new spelling"
    )
    # ".amp" covers torch.cuda.amp in every dotted form; "import amp" covers
    # ``from torch.cuda import amp``; the legacy functions all contain "autocast".
    triggers = (".amp", "import amp", "autocast", "GradScaler", "custom_fwd", "custom_bwd")
    # Every deprecated name is reached through the module ``amp`` (``torch.cuda.amp``,
    # ``torch.cpu.amp``: the identifier ``amp`` is written in the import or the attribute chain)
    # or is a legacy function whose own name says ``autocast_gpu_``/``autocast_cpu_``. A model
    # file whose only AMP word is ``torch.autocast(...)`` or a ``maybe_autocast`` helper holds neither.
    # That is ``\bamp\b|autocast_(?:gpu|cpu)_``, spelled to begin with the literal ``a`` (the
    # boundary before ``amp`` a lookbehind): ``re`` then scans for it instead of trying the
    # pattern at every position, 15 times faster on a large model file.
    requires_match = r"a(?:(?<!\wa)mp\b|utocast_(?:gpu|cpu)_)"

    valid = (
        dedent("""\
            import torch
            with torch.amp.autocast('cuda'):
                pass
        """),
        dedent("""\
            from torch.amp import autocast, GradScaler
            scaler = GradScaler('cuda')
            with autocast('cuda'):
                pass
        """),
        dedent("""\
            def autocast():
                pass
            with autocast():
                pass
        """),
        dedent("""\
            import apex.amp as amp
            model, opt = amp.initialize(model, opt)
        """),
        dedent("""\
            # torch.cuda.amp.autocast() is deprecated
            text = 'torch.cuda.amp.autocast()'
        """),
        dedent("""\
            try:
                from torch.amp import GradScaler
            except ImportError:  # torch < 2.3
                from torch.cuda.amp import GradScaler as CudaGradScaler
                GradScaler = CudaGradScaler
        """),
    )
    invalid = (
        Invalid(
            dedent("""\
                import torch
                with torch.cuda.amp.autocast():
                    pass
            """),
            fixed=dedent("""\
                import torch
                with torch.amp.autocast("cuda"):
                    pass
            """),
        ),
        Invalid(
            dedent("""\
                from torch.cuda.amp import autocast
                with autocast(enabled=False):
                    pass
            """),
            fixed=dedent("""\
                from torch.amp import autocast
                with autocast("cuda", enabled=False):
                    pass
            """),
        ),
        Invalid(
            dedent("""\
                from torch.cuda import amp
                scaler = amp.GradScaler(2.**10)
            """),
            fixed=dedent("""\
                from torch import amp
                scaler = amp.GradScaler("cuda", 2.**10)
            """),
        ),
        Invalid(
            dedent("""\
                from torch.cuda.amp import autocast
                ctx = autocast if amp else nullcontext
            """),
        ),
        Invalid(
            dedent("""\
                from typing import Optional
                import torch
                def train(model, scaler: Optional[torch.cuda.amp.GradScaler] = None):
                    pass
            """),
            fixed=dedent("""\
                from typing import Optional
                import torch
                def train(model, scaler: Optional[torch.amp.GradScaler] = None):
                    pass
            """),
        ),
        Invalid(
            dedent("""\
                try:
                    from torch.cuda.amp import GradScaler
                except ImportError:  # torch < 1.6
                    class GradScaler:
                        def __init__(self, enabled=False):
                            pass
            """),
        ),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        groups: dict[str, _Group] = {}
        for ref, qualname in facts.compat.deprecated_api_uses:
            use = _Use(ref, qualname)
            self._plan_use(use)
            key, record = rewrite_group(facts, ref)
            guard = facts.compat.deprecated_guard(ref, qualname) if record is None else None
            if guard is not None:
                key = f"guard:{id(guard[0])}"  # every use the guard covers changes with it
            group = groups.get(key)
            if group is None:
                group = groups[key] = _Group(key)
                if record is not None:
                    group.rewrite = rewrite_import(record, ref.parts[0], torch_amp_location)
                    group.record = record
                if guard is not None:
                    group.guard_edits[guard[0]] = guard[1]
            group.uses.append(use)
        for group in groups.values():
            yield from self._report(group)
        unreported = facts.compat.unreported_deprecated_imports
        fixes: dict[int, Fix | None] = {}  # one fix per import statement
        for found in unreported:
            key = id(found.record.node)
            if key not in fixes:
                fixes[key] = self._stand_in_fix([f for f in unreported if f.record is found.record])
            yield self._report_import(found, fixes[key])

    def _stand_in_fix(self, imports: list[DeprecatedImport]) -> Fix | None:
        """The fix of an import whose ``except ImportError`` binds ``None`` in its place: the
        import statement and every use of its names move to ``torch.amp`` together, or nothing does."""
        record = imports[0].record
        if len(imports) != len(record.aliases):
            return None  # a name of the statement is fixed (or not) with its own uses
        group = _Group(f"standin:{id(record.node)}", record=record)
        for found in imports:
            rewrite = rewrite_import(record, found.bound, torch_amp_location)
            uses = self.facts.compat.stand_in_uses(found)
            if rewrite.blocked or not rewrite.changes or uses is None:
                return None
            group.rewrite.changes.update(rewrite.changes)
            for ref, qualname in uses:
                use = _Use(ref, qualname)
                self._plan_use(use)
                if use.replacement is None:
                    return None
                group.uses.append(use)
        changes = dict(group.rewrite.changes)
        changes.update({use.target: use.replacement for use in group.uses})
        home = imports[0].new.rpartition(".")[0] if imports[0].new != "torch.amp" else "torch"
        return Fix.safe(f"Import from `{home}` and pass the device type", changes, group=group.key)

    # -- planning one use
    def _plan_use(self, use: _Use) -> None:
        ref, replacement = use.ref, DEPRECATED_API[use.qualname]
        use.reason = self.facts.compat.torch_too_old_for(replacement.minimum_torch)
        if use.reason:
            return
        if replacement.legacy_function:
            if not isinstance(ref.node, cst.Attribute) or ref.role != "call":
                use.reason = "only `torch.<function>(...)` calls are rewritten automatically"
                return
            call = ref.parent
            assert isinstance(call, cst.Call)
            new_func = ref.node.with_changes(attr=cst.Name(replacement.member))
            use.target = call
            use.replacement = E.insert_arg(call.with_changes(func=new_func), 0, E.positional(E.string_literal(replacement.device)))
            return
        device, member = replacement.device, replacement.member
        head = ref.parts[0]
        if not self.facts.bindings.bindings_of(head, ref.ctx.scope) and self.facts.bindings.lookup(head, ref.ctx.scope) != "torch":
            # ``amp`` bound by ``from helpers import *``: its import is in the other module
            use.reason = f"`{head}` comes from a star import: change the import where it is written"
            return
        new_ref = self._rewritten_reference(ref)
        if member in ("GradScaler", "autocast") and self.facts.compat.in_annotation(ref.node):
            # The torch.amp classes are the bases of the old ones (since 2.3), so every value the
            # annotation allowed is still allowed.
            use.target, use.replacement = ref.node, new_ref
        elif ref.role == "call":
            call = ref.parent
            assert isinstance(call, cst.Call)
            use.target = call
            use.replacement, use.reason = rewrite_call(call, new_ref, device, member)
            if member == "autocast" and use.replacement is not None:
                use.inherits_from = inherited_autocast_setting(self.facts, call, ref.ctx, device)
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
        head_target = self.facts.bindings.lookup(ref.parts[0], ref.ctx.scope)
        if head_target == "torch" and len(ref.parts) >= 4 and ref.parts[1] in ("cuda", "cpu"):
            head = ref.node
            while isinstance(head, cst.Attribute):
                head = head.value
            return E.attribute_chain(head, "amp", ref.parts[-1])
        return ref.node  # type: ignore[return-value]

    # -- reporting
    def _blocked(self, group: _Group) -> str | None:
        """Why the group's import may not change: it moves only with every use of its names."""
        if group.rewrite.blocked or not group.rewrite.changes:
            return group.rewrite.blocked
        planned = {id(use.ref.node) for use in group.uses}
        for ref in self.facts.import_uses.references_through(group.record):
            if id(ref.node) not in planned:
                row = self.facts.position(ref.node).start.line
                return f"`{ref.parts[0]}` is also used on line {row} in a way that is not rewritten"
        unfixable = [use for use in group.uses if use.replacement is None]
        if unfixable:
            row = self.facts.position(unfixable[0].ref.node).start.line
            return f"another use of the same import (line {row}) cannot be rewritten"
        return None

    def _report(self, group: _Group) -> Iterator[Violation]:
        blocked = self._blocked(group)
        changes: dict | None = None
        if blocked is None and all(use.replacement is not None for use in group.uses):
            changes = dict(group.rewrite.changes)
            changes.update(group.guard_edits)
            changes.update({use.target: use.replacement for use in group.uses})
        for use in group.uses:
            new = DEPRECATED_API[use.qualname].spelling
            message = f"`{use.qualname}` is deprecated; use `{new}`"
            # One edit for the whole import group (applied once), described per use.
            fix = Fix.safe(f"Rewrite to `{new.split('(')[0]}`", changes, group=group.key) if changes else None
            if fix is not None and any(other.inherits_from for other in group.uses):
                # Nested in another region: torch.amp.autocast would take its dtype where the old class hard-coded one.
                fix = Fix.unsafe(fix.message, fix.changes, fix.group)
            yield self.violation(use.ref.node, message, fix=fix or NoFix(f"no fix: {use.reason or blocked}"))

    def _report_import(self, found: DeprecatedImport, fix: Fix | None = None) -> Violation:
        message = f"`{found.qualname}` is deprecated; use `{found.spelling}`"
        return self.violation(found.alias, message, fix=fix or NoFix(f"no fix: {found.no_fix_reason}"))
