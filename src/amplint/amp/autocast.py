"""Autocast: the calls that build autocast objects and the regions of code they enable."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import libcst as cst

import amplint.amp.catalogue as API
from amplint.amp.autocast_helpers import bind_same_file, imported_helper_region
from amplint.amp.autocast_region import AutocastRegion
from amplint.amp.chosen_autocast import chosen_named_autocast, conditional_autocast_class
import amplint.semantic.syntax as S
from amplint.semantic.records import CallSite, Context, FunctionInfo, Scope
from amplint.semantic.values import alternatives, value_calls


@dataclass(eq=False)
class AutocastCall:
    """One call that builds an autocast object (see :attr:`FileFacts.autocast_calls`)."""

    site: CallSite
    region: AutocastRegion  # its arguments read as a region (``region.call`` is the call)
    qualname: str  # canonical autocast class (``torch.amp.autocast``, ``torch.cuda.amp.autocast`` ...)
    partial: bool = False  # ``functools.partial(torch.autocast, ...)``: arguments start at index 1

    @property
    def call(self) -> cst.Call:
        return self.site.node


@dataclass(eq=False)
class AutocastReach:
    """How a call comes to run under an autocast region (see :meth:`AutocastFacts.cuda_autocast_reaching`)."""

    region: AutocastRegion
    caller: CallSite | None = None  # the call of the same-file helper holding it, when not lexical


def device_type_of(text: str) -> str | None:
    """``"cuda:0"`` -> ``"cuda"``; ``None`` unless the text is a plain ``type[:index]`` device."""
    kind, sep, index = text.partition(":")
    if not kind.isidentifier():
        return None
    if sep and not index.strip().isdigit():
        return None
    return kind


def indexed_fstring_device_type(node: cst.FormattedString) -> str | None:
    """``"cuda"`` for ``f"cuda:{rank}"``: a literal type, a colon, then the index expression."""
    if not node.parts or not isinstance(node.parts[0], cst.FormattedStringText):
        return None
    kind, sep, rest = node.parts[0].value.partition(":")
    if not sep or rest or len(node.parts) < 2 or not kind.isidentifier():
        return None
    return kind


class AutocastFacts:
    """The ``facts.autocast`` service of :class:`~amplint.amp.facts.FileFacts`."""

    def __init__(self, facts: "FileFacts") -> None:
        self.facts = facts

    def autocast_from_call(self, call: cst.Call, scope: Scope, depth: int = 0) -> AutocastRegion | None:
        """The autocast region a context-manager expression creates, if it is one."""
        qualname = self.facts.bindings.qualname(call.func, scope)
        if qualname in API.AUTOCAST:
            return self._region_for_autocast_call(call, call, qualname, scope=scope)
        if qualname in API.PARTIAL and call.args:
            inner = self.facts.bindings.qualname(call.args[0].value, scope)
            if inner in API.AUTOCAST:
                return self._region_for_autocast_call(call, call, inner, partial=True, scope=scope)
        if depth > 2:
            return None
        # A factory stored in a variable: ``amp_autocast = partial(torch.autocast, ...)``.
        text = S.dotted(call.func)
        if text is not None:
            for assignment in self.facts.assignments_to(text, scope):
                for value_call in value_calls(assignment.value):
                    region = self.autocast_from_call(value_call, assignment.ctx.scope, depth + 1)
                    if region is not None and region.call is not None and self.facts.bindings.qualname(value_call.func, assignment.ctx.scope) in API.PARTIAL:
                        return region
            # A plain alias of the class: ``ac = torch.autocast`` then ``with ac("cuda"):``.
            alias = self.autocast_alias(text, scope)
            if alias is not None:
                return self._region_for_autocast_call(call, call, alias, scope=scope)
            # A class chosen by a flag: ``ctx = accelerator.autocast if mixed else nullcontext``.
            alias = conditional_autocast_class(self.facts, text, scope)
            if alias is not None:
                region = self._region_for_autocast_call(call, call, alias, scope=scope)
                region.conditional = True
                return region
        # A helper that returns or yields an autocast: ``with self.maybe_autocast():``.
        site = self.facts.call_site(call)
        if site is not None:
            for function in self.facts.callgraph.called_functions(site):
                region = self._function_autocast(function, depth + 1)
                if region is not None:
                    # the settings this call gives it (``torch_autocast(enabled=fp16)``)
                    return bind_same_file(self.facts, region, function, site, depth + 1)
        return None

    def _region_for_autocast_call(self, node_call: cst.Call, args_call: cst.Call, qualname: str, partial: bool = False,
                                  scope: Scope | None = None) -> AutocastRegion:
        offset = 1 if partial else 0
        deprecated = None
        device_node = None
        if qualname == "torch.cuda.amp.autocast":
            deprecated, device = "cuda", "cuda"
            dtype_node = S.argument(args_call, 1 + offset, "dtype")
            enabled_node = S.argument(args_call, 0 + offset, "enabled")
        elif qualname == "torch.cpu.amp.autocast":
            deprecated, device = "cpu", "cpu"
            dtype_node = S.argument(args_call, 1 + offset, "dtype")
            enabled_node = S.argument(args_call, 0 + offset, "enabled")
        else:
            device_node = S.argument(args_call, 0 + offset, "device_type")
            device = S.string_value(device_node)
            if device is not None:
                device = device.split(":")[0]
            dtype_node = S.argument(args_call, 1 + offset, "dtype")
            enabled_node = S.argument(args_call, 2 + offset, "enabled")
        dtype = self.dtype_name(dtype_node)
        return AutocastRegion(
            node=node_call,
            call=args_call,
            device=device,
            dtype=dtype,
            enabled=S.bool_value(enabled_node) if enabled_node is not None else True,
            resolved=True,
            deprecated=deprecated,
            device_node=device_node,
            dtype_node=dtype_node,
            dtype_choices=self.facts.dtypes.dtype_choices(dtype_node, scope) if dtype is None and dtype_node is not None and scope is not None else None,
            enabled_node=enabled_node,
        )

    def autocast_alias(self, text: str, scope: Scope) -> str | None:
        """The autocast class a name is a plain alias of (``ac = torch.autocast``), when proven.

        Only a name assigned exactly once (in ``scope`` or at module level) to a dotted name that
        resolves to an autocast class counts.
        """
        if text not in self._autocast_alias_targets:
            return None
        assignments = self.facts.assignments_to(text, scope)
        if len(assignments) != 1:
            return None
        value = assignments[0].value
        if value is None or S.dotted(value) is None:
            return None
        qualname = self.facts.bindings.qualname(value, assignments[0].ctx.scope)
        return qualname if qualname in API.AUTOCAST else None

    @cached_property
    def _autocast_alias_targets(self) -> set[str]:
        out: set[str] = set()
        for assignment in self.facts.assignments:
            value = assignment.value
            if value is not None and S.dotted(value) is not None and self.facts.bindings.qualname(value, assignment.ctx.scope) in API.AUTOCAST:
                out.update(assignment.targets)
        return out

    @cached_property
    def autocast_calls(self) -> list[AutocastCall]:
        """Every call that builds an autocast object, wherever it sits (``with``, decorator,
        assignment, return, ``partial(torch.autocast, ...)``, a plain alias of the class)."""
        out: list[AutocastCall] = []
        for site in self.facts.calls:
            call, scope = site.node, site.ctx.scope
            qualname = site.qualname
            if qualname in API.AUTOCAST:
                out.append(AutocastCall(site, self._region_for_autocast_call(call, call, qualname, scope=scope), qualname))
                continue
            if qualname in API.PARTIAL and call.args and call.args[0].keyword is None and not call.args[0].star:
                inner = self.facts.bindings.qualname(call.args[0].value, scope)
                if inner in API.AUTOCAST:
                    region = self._region_for_autocast_call(call, call, inner, partial=True, scope=scope)
                    out.append(AutocastCall(site, region, inner, partial=True))
                continue
            if qualname is None and site.func_text is not None:
                alias = self.autocast_alias(site.func_text, scope)
                if alias is not None:
                    out.append(AutocastCall(site, self._region_for_autocast_call(call, call, alias, scope=scope), alias))
        return out

    def dtype_name(self, node: cst.CSTNode | None) -> str | None:
        """``torch.float16`` / ``torch.half`` / ``"bfloat16"`` as a canonical dtype name."""
        if node is None:
            return None
        return API.dtype_from_text(S.dotted(node) or S.string_value(node))

    @cached_property
    def returning_scopes(self) -> set[int]:
        """``id``s of the scopes that return a value or yield inside a ``with``: the functions
        that may hand out an autocast."""
        return {id(ctx.scope) for _, ctx in self.facts.records.returns} | {
            id(ctx.scope) for ctx in self.facts.records.yields if ctx.withs}

    def function_autocast(self, function: FunctionInfo, depth: int = 0) -> AutocastRegion | None:
        """The autocast ``function`` returns or yields inside, as written in it (its parameters
        unbound: ``torch.amp.autocast(device_type=device_type, **kwargs)``)."""
        return self._function_autocast(function, depth)

    def _function_autocast(self, function: FunctionInfo, depth: int) -> AutocastRegion | None:
        for value, ctx in self.facts.records.returns:
            if ctx.scope is not function.scope:
                continue
            region = self._expression_autocast(value, ctx.scope, depth)
            if region is not None:
                return region
        for ctx in self.facts.records.yields:
            if ctx.scope is function.scope and ctx.withs:
                for with_node in ctx.withs:
                    for region in self._with_item_regions(with_node, ctx.scope, depth):
                        return region
        return None

    def _expression_autocast(self, value: cst.BaseExpression, scope: Scope, depth: int) -> AutocastRegion | None:
        """The autocast an expression builds; for a choice (``a if c else b``, ``a or b``, a literal
        dict looked up by key, a name assigned several times) the first autocast among its
        alternatives, holding the others."""
        leaves = alternatives(value, subscripts=True)
        found = [r for leaf in leaves if isinstance(leaf, cst.Call) and (r := self.autocast_from_call(leaf, scope, depth))]
        if found:
            region = found[0]
            region.conditional = region.conditional or len(leaves) > 1
            region.alternatives = tuple(found[1:]) + tuple(a for r in found[1:] for a in r.alternatives)
            region.choices_known = len(found) + sum(self._null_context(leaf, scope) for leaf in leaves) == len(leaves) and all(
                r.choices_known for r in found
            )
            return region
        text = S.dotted(value)
        if text is None or depth > 2:
            return None
        assignments = [a for a in self.facts.assignments_to(text, scope) if a.value is not None and a.value is not value]
        regions = [self._expression_autocast(a.value, a.ctx.scope, depth + 1) for a in assignments]
        found = [r for r in regions if r is not None]
        if not found:
            return None
        region = found[0]
        region.conditional = region.conditional or len(assignments) > 1
        region.alternatives = region.alternatives + tuple(a for r in found[1:] for a in (r, *r.alternatives))
        region.choices_known = all(r.choices_known for r in found) and all(
            r is not None or self._null_context(a.value, a.ctx.scope) for r, a in zip(regions, assignments)
        )
        return region

    def _null_context(self, value: cst.BaseExpression | None, scope: Scope) -> bool:
        """``nullcontext()`` / ``suppress()`` / ``None``: a choice that leaves autocast off."""
        if S.is_none(value):
            return True
        return isinstance(value, cst.Call) and self.facts.bindings.qualname(value.func, scope) in API.NULL_CONTEXTS

    def _with_item_regions(self, node: cst.With, scope: Scope, depth: int = 0) -> list[AutocastRegion]:
        regions = []
        for item in node.items:
            region = self._expression_autocast(item.item, scope, depth)
            if region is None:
                region = imported_helper_region(self.facts, item.item, scope)
            if region is None:
                region = self.facts.named_autocast.region_of_named(item.item, scope)
            if region is None:
                region = chosen_named_autocast(self.facts, item.item, scope)
            if region is not None:
                region.node = node
                regions.append(region)
        return regions

    @cached_property
    def autocast_regions(self) -> dict[cst.CSTNode, list[AutocastRegion]]:
        """``with`` statements and decorated functions that run under autocast."""
        out: dict[cst.CSTNode, list[AutocastRegion]] = {}
        for node, ctx in self.facts.records.withs:
            regions = self._with_item_regions(node, ctx.scope)
            if regions:
                out[node] = regions
        for function in self.facts.functions:
            for decorator in function.node.decorators:
                expr = decorator.decorator
                if isinstance(expr, cst.Call):
                    qualname = self.facts.bindings.qualname(expr.func, function.ctx.scope)
                    if qualname in API.AUTOCAST:
                        region = self._region_for_autocast_call(expr, expr, qualname, scope=function.ctx.scope)
                        region.node = function.node
                        out.setdefault(function.node, []).append(region)
        return out

    def enclosing_autocast(self, ctx: Context, enabled_only: bool = True) -> list[AutocastRegion]:
        """Autocast regions lexically around a node (innermost last)."""
        regions: list[AutocastRegion] = []
        function = self.facts.callgraph.function_of(ctx.scope)
        if function is not None:
            regions.extend(self.autocast_regions.get(function.node, []))
        for with_node in ctx.withs:
            regions.extend(self.autocast_regions.get(with_node, []))
        if enabled_only:
            # An inner ``autocast(enabled=False)`` switches autocast off for its body.
            active: list[AutocastRegion] = []
            for region in regions:
                if region.enabled is False:
                    active = []
                else:
                    active.append(region)
            return active
        return regions

    def innermost_cuda_autocast(self, ctx: Context) -> AutocastRegion | None:
        """The innermost enabled, resolved CUDA autocast region lexically around ``ctx``.

        ``None`` under an ``autocast(enabled=False)`` that nothing enabled re-opens.
        """
        active = self.enclosing_autocast(ctx)
        if not active and any(r.enabled is False for r in self.enclosing_autocast(ctx, enabled_only=False)):
            return None
        for region in reversed(active):
            if region.resolved and region.device == "cuda":
                return region
        return None

    def cuda_autocast_reaching(self, site: CallSite) -> AutocastReach | None:
        """The CUDA autocast region ``site`` runs under: lexically, or through the same-file
        function holding it when another scope calls that function inside such a region.

        A function that opens a ``with`` or an autocast region around the call manages autocast
        itself, so its callers are not asked.
        """
        region = self.innermost_cuda_autocast(site.ctx)
        if region is not None:
            return AutocastReach(region)
        if site.ctx.withs or self.enclosing_autocast(site.ctx, enabled_only=False):
            return None
        function = self.facts.callgraph.function_of(site.ctx.scope)
        if function is None:
            return None
        for caller in self.facts.callgraph.callers_of(function):
            if caller.ctx.scope is site.ctx.scope:
                continue
            region = self.innermost_cuda_autocast(caller.ctx)
            if region is not None:
                return AutocastReach(region, caller)
        return None
