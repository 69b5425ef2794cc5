"""Optimizers: which names are optimizers, where they are built, which modules they train."""

from __future__ import annotations

from functools import cached_property

import libcst as cst

import amplint.amp.catalogue as API
import amplint.semantic.syntax as S
from amplint.semantic.records import Assignment, CallSite, Scope
from amplint.semantic.values import value_calls


def parameters_owner(node: cst.CSTNode | None) -> str | None:
    """``model`` for ``model.parameters()``-style arguments."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "parameters":
        return S.dotted(node.func.value)
    return None


class OptimizerFacts:
    """The ``facts.optim`` service of :class:`~amplint.amp.facts.FileFacts`."""

    def __init__(self, facts: "FileFacts") -> None:
        self.facts = facts

    def is_optimizer_construction(self, site: CallSite, factories: bool = True) -> bool:
        """``torch.optim.X(...)``, a known optimizer class, or (with ``factories``) a factory call."""
        return API.is_optimizer_class(site.qualname, site.func_text, factories)

    @cached_property
    def optimizer_constructions(self) -> list[CallSite]:
        return [site for site in self.facts.calls if self.is_optimizer_construction(site)]

    @cached_property
    def optimizers(self) -> set[str]:
        """Optimizer keys: assigned a construction, stepped or unscaled by a scaler, or named like
        an optimizer and stepped or zeroed."""
        keys: set[str] = set()
        for assignment in self.facts.assignments:
            for call in value_calls(assignment.value):
                site = self.facts.call_site(call)
                if site is not None and self.is_optimizer_construction(site):
                    keys.update(assignment.targets)
        for site in self.facts.calls:
            func = site.node.func
            if not isinstance(func, cst.Attribute):
                continue
            receiver = S.dotted(func.value)
            method = func.attr.value
            if method in ("step", "unscale_") and self.facts.scaling.is_scaler(receiver):
                args = S.positional_args(site.node)
                text = S.dotted(args[0].value) if args else None
                if text is not None:
                    keys.add(text)
            elif method in ("zero_grad", "step") and receiver is not None and API.is_optimizer_name(receiver):
                keys.add(receiver)
        return {k for k in keys if not self.facts.scaling.is_scaler(k)}

    def is_optimizer(self, key: str | None) -> bool:
        return key is not None and key in self.optimizers

    @cached_property
    def optimizer_builds(self) -> dict[str, list[Assignment]]:
        """Optimizer key -> the assignments that build it directly (``opt = torch.optim.AdamW(...)``)."""
        out: dict[str, list[Assignment]] = {}
        for assignment in self.facts.assignments:
            site = self.facts.call_site(assignment.value) if isinstance(assignment.value, cst.Call) else None
            if site is not None and self.is_optimizer_construction(site, factories=False):
                for target in assignment.targets:
                    out.setdefault(target, []).append(assignment)
        return out

    def optimizer_builds_of(self, key: str, scope: Scope | None = None) -> list[Assignment]:
        """The builds of the optimizer variable ``key`` names in ``scope`` (``opt_g`` built in two
        functions is two variables); all builds of ``key`` when ``scope`` sees none of them
        (a parameter, an optimizer built by a caller)."""
        builds = self.optimizer_builds.get(key, [])
        if scope is None:
            return builds
        variable = self.facts.identity.variable(key, scope)
        own = [a for a in builds if variable is not None and self.facts.identity.variable(key, a.ctx.scope) == variable]
        return own or builds

    def optimizer_parameter_owners(self, key: str, scope: Scope | None = None) -> set[str] | None:
        """For ``opt = Adam(model.parameters())``: ``{"model"}``; ``None`` when not visible."""
        constructions = self.optimizer_builds_of(key, scope)
        if not constructions:
            return None
        owners: set[str] = set()
        for assignment in constructions:
            owner = parameters_owner(S.argument(assignment.value, 0, "params"))
            if owner is None:
                return None
            owners.add(owner)
        return owners

    def clip_parameter_owner(self, call: cst.Call) -> str | None:
        """``model`` for ``clip_grad_norm_(model.parameters(), ...)`` / ``model.clip_grad_norm_(...)``."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("clip_grad_norm_", "clip_grad_value_"):
            site = self.facts.call_site(call)
            if site is not None and site.qualname not in API.CLIP_FUNCTIONS:
                return S.dotted(func.value)
        return parameters_owner(S.argument(call, 0, "parameters"))

    @cached_property
    def optimized_modules(self) -> list[tuple[str, CallSite]]:
        """(module key, optimizer construction) for modules whose parameters an optimizer receives.

        ``SGD(model.parameters())``, param groups (``[{"params": m.parameters()}]``), a name bound
        first (``params = filter(..., model.parameters()); AdamW(params)``), and factories given the
        module itself (``create_optimizer_v2(model, ...)``, ``build_optimizer(cfg, model)``).
        """
        out: list[tuple[str, CallSite]] = []
        for site in self.optimizer_constructions:
            nodes: list[cst.CSTNode] = [site.node]
            for arg in site.node.args:
                if isinstance(arg.value, cst.Name):
                    for assignment in self.facts.assignments_to(arg.value.value, site.ctx.scope):
                        if assignment.value is not None and assignment.ctx.order < site.ctx.order:
                            nodes.append(assignment.value)
            for node in nodes:
                for inner in self.facts.calls_within(node):
                    func = inner.node.func
                    if isinstance(func, cst.Attribute) and func.attr.value in ("parameters", "named_parameters"):
                        key = S.dotted(func.value)
                        if key is not None:
                            out.append((key, site))
            if API.OPTIMIZER_FACTORY.search((site.func_text or "").rsplit(".", 1)[-1]):
                for arg in site.node.args:
                    if arg.star:
                        continue
                    key = S.dotted(arg.value)
                    if key is not None and (arg.keyword is None or arg.keyword.value in ("model", "module", "net")):
                        out.append((key, site))
        return out
