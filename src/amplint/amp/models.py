"""Models and gradients: code that runs without autograd, modules frozen or called."""

from __future__ import annotations

from functools import cached_property

import libcst as cst

import amplint.amp.catalogue as API
import amplint.semantic.syntax as S
from amplint.semantic.records import CallSite, Context, Scope


class ModelFacts:
    """The ``facts.models`` service of :class:`~amplint.amp.facts.FileFacts`."""

    def __init__(self, facts: "FileFacts") -> None:
        self.facts = facts

    # -- gradient-free code: ``with torch.no_grad():``, ``@torch.inference_mode()``
    def _grad_disabling(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        target = expr.func if isinstance(expr, cst.Call) else expr
        qualname = self.facts.bindings.qualname(target, scope)
        if qualname in API.GRAD_DISABLING:
            return True
        if isinstance(expr, cst.Call) and qualname in ("torch.set_grad_enabled", "torch.autograd.set_grad_enabled"):
            return S.bool_value(S.argument(expr, 0, "mode")) is False
        return False

    @cached_property
    def grad_disabled_nodes(self) -> set[cst.CSTNode]:
        """``with`` blocks and decorated functions that run without autograd (no_grad/inference_mode)."""
        out: set[cst.CSTNode] = set()
        for node, ctx in self.facts.records.withs:
            if any(self._grad_disabling(item.item, ctx.scope) for item in node.items):
                out.add(node)
        for function in self.facts.functions:
            if any(self._grad_disabling(d.decorator, function.ctx.scope) for d in function.node.decorators):
                out.add(function.node)
        return out

    def in_no_grad(self, ctx: Context) -> bool:
        """The code at ``ctx`` runs under ``no_grad``/``inference_mode`` (lexically, incl. decorators)."""
        if any(w in self.grad_disabled_nodes for w in ctx.withs):
            return True
        scope: Scope | None = ctx.scope
        while scope is not None:
            if scope.kind == "function" and scope.node in self.grad_disabled_nodes:
                return True
            scope = scope.parent
        return False

    def module_calls(self, key: str) -> list[CallSite]:
        """Calls that run a module: ``model(x)`` / ``model.forward(x)``."""
        return [s for s in self.facts.calls if s.func_text in (key, f"{key}.forward")]

    @cached_property
    def frozen_modules(self) -> set[str]:
        """Module keys frozen in this file: ``m.requires_grad_(False)``, ``for p in m.parameters():
        p.requires_grad = False``, or ``m.eval()`` with no ``m.train()`` anywhere."""
        out: set[str] = set()
        trained: set[str] = set()
        evaluated: set[str] = set()
        for site in self.facts.calls:
            func = site.node.func
            if not isinstance(func, cst.Attribute):
                continue
            key = S.dotted(func.value)
            if key is None:
                continue
            method = func.attr.value
            if method == "requires_grad_":
                value = S.argument(site.node, 0, "requires_grad")
                if S.bool_value(value) is False:
                    out.add(key)
            elif method == "eval":
                evaluated.add(key)
            elif method == "train":
                trained.add(key)
        out |= evaluated - trained
        for loop in self.facts.loops:
            if not isinstance(loop.node, cst.For) or not isinstance(loop.node.iter, cst.Call):
                continue
            func = loop.node.iter.func
            if not (isinstance(func, cst.Attribute) and func.attr.value == "parameters"):
                continue
            key = S.dotted(func.value)
            names = loop.target_names
            for assignment in self.facts.assignments:
                if loop in assignment.ctx.loops and S.bool_value(assignment.value) is False:
                    if any(t.endswith(".requires_grad") and t.split(".")[0] in names for t in assignment.targets):
                        if key is not None:
                            out.add(key)
        return out
