"""Same-file calls: which functions a call may run, and who calls a set of functions."""

from __future__ import annotations

from functools import cached_property

import libcst as cst

import amplint.semantic.syntax as S
from amplint.semantic.records import CallSite, FunctionInfo, Reference, Scope


class CallGraph:
    """The ``model.callgraph`` service of :class:`~amplint.semantic.model.SemanticModel`; reads ``calls`` and ``functions``."""

    def __init__(self, model: "SemanticModel") -> None:
        self.model = model

    @cached_property
    def functions_by_name(self) -> dict[str, list[FunctionInfo]]:
        out: dict[str, list[FunctionInfo]] = {}
        for info in self.model.functions:
            out.setdefault(info.node.name.value, []).append(info)
        return out

    def function_of(self, scope: Scope) -> FunctionInfo | None:
        node = scope.function.node
        return self.model.function_by_node.get(node) if isinstance(node, cst.FunctionDef) else None

    def called_functions(self, site: CallSite) -> list[FunctionInfo]:
        """Same-file functions a call may run: ``f(...)``, ``self.f(...)``, ``cls.f(...)``."""
        text = site.func_text
        if text is None:
            return []
        parts = text.split(".")
        if len(parts) == 1:
            if self.model.bindings.lookup(parts[0], site.ctx.scope) is not None:
                return []
            return [f for f in self.functions_by_name.get(parts[0], []) if f.class_name is None]
        if len(parts) == 2 and parts[0] in ("self", "cls"):
            own = self.function_of(site.ctx.scope)
            candidates = self.functions_by_name.get(parts[1], [])
            same_class = [f for f in candidates if own is not None and f.class_name == own.class_name]
            return same_class or [f for f in candidates if f.class_name is not None]
        return []

    def calls_into(self, site: CallSite, scopes: set[Scope]) -> bool:
        """The call may run one of the functions whose scopes are ``scopes``."""
        return any(f.scope in scopes for f in self.called_functions(site))

    def callers_closure(self, scopes: set[Scope]) -> set[Scope]:
        """``scopes`` and every scope that (transitively, within this file) calls into them."""
        result = set(scopes)
        changed = True
        while changed:
            changed = False
            for site in self.model.calls:
                if site.ctx.scope not in result and self.calls_into(site, result):
                    result.add(site.ctx.scope)
                    changed = True
        return result

    def callers_of(self, function: FunctionInfo) -> list[CallSite]:
        """Calls in this file that may run ``function``."""
        return [site for site in self.model.calls if function in self.called_functions(site)]

    def argument_for(self, site: CallSite, function: FunctionInfo, param: str) -> cst.BaseExpression | None:
        """The expression ``site`` passes for ``function``'s parameter ``param``; a method called
        as ``self.f(...)`` / ``obj.f(...)`` does not count its ``self``."""
        if param not in function.params:
            return None
        position = function.params.index(param)
        bound_method = function.class_name is not None and isinstance(site.node.func, cst.Attribute)
        if bound_method and function.params and function.params[0] in ("self", "cls"):
            position -= 1
        return S.argument(site.node, position if position >= 0 else None, param)

    @cached_property
    def calls_by_scope(self) -> dict[Scope, list[CallSite]]:
        """Each scope's own calls, in source order."""
        out: dict[Scope, list[CallSite]] = {}
        for site in self.model.calls:
            out.setdefault(site.ctx.scope, []).append(site)
        return out

    def calls_between(self, scope: Scope, start: int, end: int | None) -> list[CallSite]:
        """Calls of ``scope`` strictly after source order ``start`` and before ``end`` (no bound when ``None``)."""
        return [
            site for site in self.calls_by_scope.get(scope, [])
            if start < site.ctx.order and (end is None or site.ctx.order < end)
        ]

    def argument_references(self, site: CallSite) -> list[Reference]:
        """The dotted names a call's arguments read (the callee's own names left out)."""
        call = site.node
        return [
            ref for ref in self.model.references
            if ref.ctx.stmt is site.ctx.stmt and self.model.tree.contains(call, ref.node) and ref.node is not call.func
            and not self.model.tree.contains(call.func, ref.node)
        ]
