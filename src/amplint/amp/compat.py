"""The deprecated AMP API, its replacements, and compatibility fallbacks (code that runs only
where a newer API is missing)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import libcst as cst

import amplint.amp.catalogue as API
from amplint.amp.version_gates import catches_api_errors, catches_failed_import, is_version_gate
from amplint.semantic.records import Context, ImportRecord, Reference
import amplint.semantic.syntax as S


@dataclass(frozen=True)
class Replacement:
    """What a deprecated name becomes (see ``AMP-FACTS.md``)."""

    device: str  # the device type the old name hard-coded
    member: str  # ``torch.amp.<member>``, or ``torch.<member>`` for a legacy function
    minimum_torch: tuple[int, int] | None  # the first torch release that has the replacement
    legacy_function: bool = False  # a ``torch.*`` function, not a ``torch.cuda/cpu.amp`` member

    @property
    def spelling(self) -> str:
        """The replacement as a user would write it, for messages."""
        if self.legacy_function:
            value = {"set_autocast_dtype": ", dtype", "set_autocast_enabled": ", enabled"}.get(self.member, "")
            return f'torch.{self.member}("{self.device}"{value})'
        if self.member in ("custom_fwd", "custom_bwd"):
            return f'torch.amp.{self.member}(device_type="{self.device}")'
        return f'torch.amp.{self.member}("{self.device}", ...)'


# canonical deprecated name -> its replacement
DEPRECATED_API = {
    "torch.cuda.amp.autocast": Replacement("cuda", "autocast", None),
    "torch.cpu.amp.autocast": Replacement("cpu", "autocast", None),
    "torch.cuda.amp.GradScaler": Replacement("cuda", "GradScaler", (2, 3)),
    "torch.cpu.amp.GradScaler": Replacement("cpu", "GradScaler", (2, 3)),
    "torch.cuda.amp.custom_fwd": Replacement("cuda", "custom_fwd", (2, 4)),
    "torch.cuda.amp.custom_bwd": Replacement("cuda", "custom_bwd", (2, 4)),
    "torch.get_autocast_gpu_dtype": Replacement("cuda", "get_autocast_dtype", (2, 4), legacy_function=True),
    "torch.set_autocast_gpu_dtype": Replacement("cuda", "set_autocast_dtype", (2, 4), legacy_function=True),
    "torch.get_autocast_cpu_dtype": Replacement("cpu", "get_autocast_dtype", (2, 4), legacy_function=True),
    "torch.set_autocast_cpu_dtype": Replacement("cpu", "set_autocast_dtype", (2, 4), legacy_function=True),
    "torch.is_autocast_cpu_enabled": Replacement("cpu", "is_autocast_enabled", (2, 4), legacy_function=True),
    "torch.set_autocast_cpu_enabled": Replacement("cpu", "set_autocast_enabled", (2, 4), legacy_function=True),
}
# The positional parameters of the old autocast classes, in order.
OLD_AUTOCAST_PARAMETERS = ("enabled", "dtype", "cache_enabled")
NEW_API = frozenset(
    {"torch.amp.autocast", "torch.amp.GradScaler", "torch.amp.custom_fwd", "torch.amp.custom_bwd",
     "torch.get_autocast_dtype", "torch.set_autocast_dtype", "torch.set_autocast_enabled", "torch.is_autocast_enabled"}
)
_DEPRECATED_MODULES = ("torch.cuda.amp", "torch.cpu.amp")


def torch_amp_location(dotted_name: str) -> str | None:
    """Where an imported deprecated module or member lives now: ``torch.cuda.amp.autocast_mode.autocast``
    -> ``torch.amp.autocast``, ``torch.cuda.amp`` -> ``torch.amp``; ``None`` for anything else."""
    canonical = API.canonical(dotted_name)
    replacement = DEPRECATED_API.get(canonical)
    if replacement is not None and not replacement.legacy_function:
        return f"torch.amp.{replacement.member}"
    if canonical in _DEPRECATED_MODULES:
        return "torch.amp"
    return None


@dataclass(frozen=True)
class DeprecatedImport:
    """An import of a deprecated module or name that no reported use points back to."""

    record: ImportRecord
    alias: cst.ImportAlias
    bound: str  # the name it binds
    qualname: str  # canonical deprecated name (``torch.cuda.amp.GradScaler``, ``torch.cuda.amp``)
    new: str  # where it lives now (``torch.amp.GradScaler``, ``torch.amp``)
    rebinding_line: int | None  # the line of another statement binding the same name, if any

    @property
    def spelling(self) -> str:
        """The replacement as a user would write it, for messages."""
        replacement = DEPRECATED_API.get(self.qualname)
        return replacement.spelling if replacement is not None else self.new

    @property
    def no_fix_reason(self) -> str:
        if self.rebinding_line is not None:
            home = self.new.rpartition(".")[0] or self.new
            return f"`{self.bound}` is also bound on line {self.rebinding_line}: import it from `{home}` by hand"
        return (
            f"`{self.bound}` has no use here that could be rewritten (unused, re-exported, or named only in a "
            "string annotation): change the import by hand"
        )


class CompatFacts:
    """The ``facts.compat`` service of :class:`~amplint.amp.facts.FileFacts`."""

    def __init__(self, facts: "FileFacts") -> None:
        self.facts = facts

    @cached_property
    def deprecated_api_uses(self) -> list[tuple[Reference, str]]:
        """References to a name of :data:`DEPRECATED_API`, with its canonical name, in source order.

        Code that already prefers the new API and keeps the old name for old torch (see
        :meth:`is_compat_fallback`) is right and left out.
        """
        return [
            (ref, qualname)
            for ref, qualname in self.facts.bindings.references_to(lambda q: q in DEPRECATED_API)
            if not self.is_compat_fallback(ref.node, ref.ctx, NEW_API.__contains__) and not self.is_feature_probe(ref)
        ]

    def is_feature_probe(self, ref: Reference) -> bool:
        """``try: _ = torch.cpu.amp.autocast / except AttributeError: ...``: the name is only looked
        up to learn whether this torch has it, never used."""
        stmt = ref.ctx.stmt
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return False
        small = stmt.body[0]
        probed = (isinstance(small, cst.Expr) and small.value is ref.node) or (
            isinstance(small, cst.Assign) and small.value is ref.node
            and all(isinstance(t.target, cst.Name) and t.target.value == "_" for t in small.targets)
        )
        if not probed:
            return False
        for branch in ref.ctx.branches:
            if isinstance(branch.node, cst.Try) and branch.part == "body":
                for handler in branch.node.handlers:
                    caught = self.facts.code(handler.type) if handler.type is not None else "AttributeError"
                    if "AttributeError" in caught or "ImportError" in caught:
                        return True
        return False

    def torch_too_old_for(self, minimum: tuple[int, int] | None) -> str | None:
        """Why the configured ``target-torch`` cannot use an API added in ``minimum``; ``None`` when it can."""
        target = getattr(self.facts.settings, "target_torch", None)
        if minimum is not None and target is not None and target < minimum:
            return f"the replacement needs torch >= {minimum[0]}.{minimum[1]} (target-torch is {target[0]}.{target[1]})"
        return None

    def _mentions(self, node: cst.CSTNode | None, predicate) -> bool:
        """``node`` reads a name satisfying ``predicate``, or imports one (``from torch.amp import
        GradScaler``, ``from torch import amp``)."""
        if node is None:
            return False
        if any(
            (q := self.facts.bindings.qualname(ref.node, ref.ctx.scope)) is not None and predicate(q)
            for ref in self.facts.references_within(node)
        ):
            return True
        return any(
            predicate(API.canonical(target)) or API.canonical(target) == "torch.amp"
            for record in self.facts.imports
            if self.facts.tree.within(record.node, node)
            for _, _, target in record.aliases
        )

    def in_annotation(self, node: cst.CSTNode) -> bool:
        """``node`` is part of a parameter, return or variable annotation."""
        return any(self.facts.tree.within(node, annotation) for annotation in self.facts.records.annotations)

    @cached_property
    def unreported_deprecated_imports(self) -> list[DeprecatedImport]:
        """Imports of a deprecated module or name through which no reference resolves, so that
        no use of theirs is reported: the name is unused (re-exported, say), or also bound
        otherwise (``class GradScaler: ...`` in an ``except`` arm, ``GradScaler = None`` in the
        ``else`` of a version gate). Imports that are compatibility fallbacks are left out."""
        out = []
        for record in self.facts.imports:
            for alias, bound, target in record.aliases:
                new = torch_amp_location(target)
                if new is None or any(r.parts[0] == bound for r in self.facts.import_uses.references_through(record)):
                    continue
                if self.is_compat_fallback(record.node, record.ctx, NEW_API.__contains__):
                    continue
                if self._probes_for_import(record, bound):
                    continue
                others = [b for b in self.facts.bindings.bindings_of(bound, record.scope) if not b.is_import]
                line = self.facts.position(others[0].node).start.line if others else None
                out.append(DeprecatedImport(record, alias, bound, API.canonical(target), new, line))
        return out

    def _probes_for_import(self, record, bound: str) -> bool:
        """``try: import torch.cuda.amp as amp / return True / except ModuleNotFoundError: return False``
        inside a function: a local name bound by nothing else and read nowhere, in a ``try`` that
        catches the import failing, only asks whether this torch has the module (importing a
        module warns about nothing). At module level the name may be imported by another module."""
        if record.scope.kind != "function":
            return False
        if any(not b.is_import for b in self.facts.bindings.bindings_of(bound, record.scope)):
            return False
        if any(ref.parts[0] == bound for ref in self.facts.references):
            return False
        return any(catches_failed_import(self.facts, handler) for branch in record.ctx.branches
                   if isinstance(branch.node, cst.Try) and branch.part == "body" for handler in branch.node.handlers)

    def hasattr_probe(self, test: cst.BaseExpression, scope) -> tuple[cst.Call, str, bool] | None:
        """``test`` is ``hasattr(X, "name")`` or ``not hasattr(X, "name")``: the call, the
        canonical name it asks for (``torch.cuda.amp.custom_fwd``) and whether a true answer
        takes the ``if`` body."""
        present = True
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, present = test.expression, False
        if not (isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value == "hasattr"):
            return None
        if len(test.args) != 2 or any(arg.keyword is not None or arg.star for arg in test.args):
            return None
        owner, member = test.args[0].value, test.args[1].value
        if not isinstance(member, cst.SimpleString):
            return None
        owner_name = self.facts.bindings.qualname(owner, scope)
        name = member.evaluated_value
        if owner_name is None or not isinstance(name, str):
            return None
        return test, API.canonical(f"{owner_name}.{name}"), present

    def deprecated_guard(self, ref: Reference, qualname: str) -> tuple[cst.Call, cst.Call] | None:
        """The ``hasattr(torch.cuda.amp, "custom_fwd")`` of the innermost ``if`` around ``ref`` that
        asks for the deprecated name ``ref`` uses, with the same question asked of its replacement
        (``hasattr(torch.amp, "custom_fwd")``): rewritten with the use, the guard and its body keep
        asking for one API. ``None`` when no such guard is written through ``torch`` itself."""
        replacement = DEPRECATED_API[qualname]
        for branch in reversed(ref.ctx.branches):
            if not isinstance(branch.node, cst.If) or branch.part not in ("body", "orelse"):
                continue
            probe = self.hasattr_probe(branch.node.test, ref.ctx.scope)
            if probe is None or probe[1] != qualname:
                continue
            call = probe[0]
            owner, member = call.args[0].value, call.args[1].value
            if replacement.legacy_function:
                if self.facts.bindings.qualname(owner, ref.ctx.scope) != "torch":
                    return None
                new_member = cst.SimpleString(f"{member.value[0]}{replacement.member}{member.value[0]}")  # type: ignore[attr-defined]
                return call, call.with_deep_changes(call.args[1], value=new_member)
            parts = S.dotted_parts(owner)
            head = self.facts.bindings.lookup(parts[0], ref.ctx.scope) if parts else None
            if head != "torch" or len(parts) != 3 or parts[1] not in ("cuda", "cpu"):
                return None  # ``hasattr(amp, ...)`` follows the import it names when that is rewritten
            base = owner
            while isinstance(base, cst.Attribute):
                base = base.value
            return call, call.with_deep_changes(call.args[0], value=cst.Attribute(value=base, attr=cst.Name("amp")))
        return None

    def _asks_for_new_api_elsewhere(self, ctx: Context, new_api) -> bool:
        """``ctx`` is the branch an ``if hasattr(<new API>)`` takes when the new API is missing:
        ``if not hasattr(torch.amp, "GradScaler"): <here>`` or the ``else`` of ``if hasattr(...)``."""
        for branch in ctx.branches:
            if not isinstance(branch.node, cst.If) or branch.part not in ("body", "orelse"):
                continue
            probe = self.hasattr_probe(branch.node.test, ctx.scope)
            if probe is not None and new_api(probe[1]) and probe[2] == (branch.part == "orelse"):
                return True
        return False

    def stand_in_uses(self, found: DeprecatedImport) -> list[tuple[Reference, str]] | None:
        """``try: from torch.cuda import amp / except ImportError: amp = None``: the uses of the
        imported name with their canonical deprecated names, when the name's only other bindings
        are ``= None`` stand-ins in an ``except ImportError`` of the ``try`` that imports it. The
        import and these uses can move to ``torch.amp`` together: the ``except`` then catches the
        new import failing, and the stand-in keeps meaning "this torch lacks it". ``None`` when
        the name is bound otherwise or has a use other than a deprecated name and ``is None``."""
        record, bound = found.record, found.bound
        guard = next(
            (b.node for b in reversed(record.ctx.branches) if isinstance(b.node, cst.Try) and b.part == "body"), None
        )
        if guard is None:
            return None
        handlers = [
            handler for handler in guard.handlers
            if handler.type is not None and ("ImportError" in (caught := self.facts.code(handler.type))
                                             or "ModuleNotFoundError" in caught)
        ]
        bindings = self.facts.bindings.bindings_of(bound, record.scope)
        imports = [b for b in bindings if b.is_import]
        if len(imports) != 1 or imports[0].node is not found.alias:
            return None
        for binding in bindings:
            if binding.is_import:
                continue
            if not (isinstance(binding.value, cst.Name) and binding.value.value == "None" and binding.node is not None
                    and any(self.facts.tree.within(binding.node, handler) for handler in handlers)):
                return None
        uses = []
        for ref in self.facts.references:
            if ref.parts[0] != bound or self.facts.bindings.bindings_of(bound, ref.ctx.scope) != bindings:
                continue
            if any(self.facts.tree.within(ref.node, handler) for handler in guard.handlers):
                continue
            if len(ref.parts) == 1 and self._tests_presence(ref):
                continue  # ``if GradScaler is None:`` asks the same of either import
            qualname = API.canonical(".".join((found.qualname, *ref.parts[1:])))
            if qualname in DEPRECATED_API and not DEPRECATED_API[qualname].legacy_function:
                uses.append((ref, qualname))
            else:
                return None  # ``amp.grad_scaler.OptState``, ``helper(amp)``: not a use this rewrite knows
        return uses

    @staticmethod
    def _tests_presence(ref: Reference) -> bool:
        """``ref`` is only compared with ``None`` (``x is None``, ``x is not None``)."""
        stmt = ref.ctx.stmt
        pending = [stmt.test] if isinstance(stmt, (cst.If, cst.While)) else [stmt] if stmt is not None else []
        while pending:
            node = pending.pop()
            if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
                target = node.comparisons[0]
                sides = (node.left, target.comparator)
                if ref.node in sides and isinstance(target.operator, (cst.Is, cst.IsNot)):
                    other = sides[1] if sides[0] is ref.node else sides[0]
                    return isinstance(other, cst.Name) and other.value == "None"
            pending.extend(node.children)
        return False

    def is_compat_fallback(self, node: cst.CSTNode, ctx: Context, new_api) -> bool:
        """``node`` runs only when a newer API is unavailable.

        True in an ``except`` that catches a missing API (``ImportError``, ``AttributeError``,
        ``TypeError``, a catch-all) of a ``try`` whose body uses the new API; in the branch of an
        ``if``/``elif`` chain or conditional expression whose other branch uses it, when a test
        of the chain asks which torch this is (:func:`~amplint.amp.version_gates.is_version_gate`:
        ``hasattr(torch.amp, ...)``, ``torch.__version__``, ``TORCH_2_4``); after ``if <version
        gate>: <new API> ... return``; and in the branch an ``if hasattr(<new API>)`` takes when
        the new API is missing. A version check alone proves nothing (the newer branch may still
        use the old names), nor does a device or precision dispatch (``if device == "cpu":``,
        ``if torch.cuda.is_available():``) whose other arm uses the new API: every arm of it runs
        on a current torch.
        """
        if self._asks_for_new_api_elsewhere(ctx, new_api):
            return True
        facts = self.facts
        for branch in ctx.branches:
            owner = branch.node
            if isinstance(owner, cst.Try) and branch.part == "handler" and self._mentions(owner.body, new_api):
                if any(facts.tree.within(node, h) and catches_api_errors(facts, h) for h in owner.handlers):
                    return True
            if isinstance(owner, cst.If) and branch.part in ("body", "orelse"):
                other = owner.orelse if branch.part == "body" else owner.body
                if self._mentions(other, new_api) and any(
                    is_version_gate(facts, test, ctx.scope) for test in self._chain_tests(owner, ctx)
                ):
                    return True
        for expression in facts.records.conditional_expressions:
            if not facts.tree.contains(expression, node) or facts.tree.contains(expression.test, node):
                continue
            other = expression.orelse if facts.tree.contains(expression.body, node) else expression.body
            if self._mentions(other, new_api) and is_version_gate(facts, expression.test, ctx.scope):
                return True
        for statement, if_ctx in facts.records.if_statements:
            if if_ctx.scope is not ctx.scope or if_ctx.order > ctx.order or facts.tree.contains(statement, node):
                continue
            body = statement.body.body if isinstance(statement.body, cst.IndentedBlock) else ()
            returns = any(
                isinstance(small, cst.Return)
                for line in body[-1:]
                if isinstance(line, cst.SimpleStatementLine)
                for small in line.body
            )
            if returns and self._mentions(statement.body, new_api) and is_version_gate(facts, statement.test, if_ctx.scope):
                return True
        return False

    @staticmethod
    def _chain_tests(owner: cst.If, ctx: Context) -> list[cst.BaseExpression]:
        """The tests of the ``if``/``elif`` chain ``owner`` belongs to: the ``if`` statements
        around it of which it is the ``elif``, itself, and its own ``elif`` arms."""
        chain = [owner]
        parts = [b for b in ctx.branches if isinstance(b.node, cst.If)]
        index = next((i for i, b in enumerate(parts) if b.node is owner), None)
        while index is not None and index > 0 and parts[index - 1].part == "orelse" and parts[index - 1].node.orelse is chain[0]:
            index -= 1
            chain.insert(0, parts[index].node)
        current = owner.orelse
        while isinstance(current, cst.If):
            chain.append(current)
            current = current.orelse
        return [statement.test for statement in chain]
