"""Devices: where code evidently runs on CUDA, the device type a function has at hand, and the
checks of autocast's state that name no device."""

from __future__ import annotations

from functools import cached_property

import libcst as cst

import amplint.semantic.syntax as S
from amplint.semantic.records import Branch, CallSite, Scope

AUTOCAST_STATE_CHECK = "torch.is_autocast_enabled"
_CUDA_CUSTOM_DECORATORS = frozenset({"torch.cuda.amp.custom_fwd", "torch.cuda.amp.custom_bwd"})
_CUSTOM_DECORATORS = frozenset({"torch.amp.custom_fwd", "torch.amp.custom_bwd"})


def is_cuda_literal(node: cst.CSTNode | None) -> bool:
    return S.string_value(node) == "cuda"


def cuda_proven_in(test: cst.BaseExpression) -> str | None:
    """The part of an ``if`` that runs only on CUDA by its test: ``"body"`` for ``x.is_cuda``,
    ``device == "cuda"`` (or an ``and`` chain holding one), ``"orelse"`` for ``device != "cuda"``;
    ``None`` when the test proves nothing."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        if cuda_proven_in(test.left) == "body" or cuda_proven_in(test.right) == "body":
            return "body"
        return None
    if isinstance(test, cst.Attribute) and test.attr.value == "is_cuda":
        return "body"
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if not any(is_cuda_literal(side) for side in (test.left, target.comparator)):
            return None
        if isinstance(target.operator, (cst.Equal, cst.Is)):
            return "body"
        if isinstance(target.operator, (cst.NotEqual, cst.IsNot)):
            return "orelse"
    return None


def _other_arm(branch: Branch) -> Branch | None:
    """The arm that runs instead of ``branch``'s: a ``try`` body for its handler, the other
    part of an ``if``."""
    if isinstance(branch.node, cst.Try) and branch.part == "handler":
        return Branch(branch.node, "body")
    if isinstance(branch.node, cst.If):
        return Branch(branch.node, "orelse" if branch.part == "body" else "body")
    return None


class DeviceFacts:
    """The ``facts.devices`` service of :class:`~amplint.amp.facts.FileFacts`."""

    def __init__(self, facts: "FileFacts") -> None:
        self.facts = facts

    @cached_property
    def autocast_state_checks(self) -> list[CallSite]:
        """Every ``torch.is_autocast_enabled(...)`` call, with or without a device type."""
        return [site for site in self.facts.calls if site.qualname == AUTOCAST_STATE_CHECK]

    def runs_on_cuda_evidently(self, site: CallSite) -> bool:
        """``site`` runs only on CUDA as the code shows: in an ``if`` whose test (or whose arm)
        proves the device is CUDA, or in a CUDA autocast region."""
        stmt = site.ctx.stmt
        if isinstance(stmt, (cst.If, cst.While)) and cuda_proven_in(stmt.test) == "body":
            return True  # ``if x.is_cuda and torch.is_autocast_enabled():``
        for branch in site.ctx.branches:
            if isinstance(branch.node, cst.If) and branch.part in ("body", "orelse"):
                if cuda_proven_in(branch.node.test) == branch.part:
                    return True
        regions = self.facts.autocast.enclosing_autocast(site.ctx)
        return (bool(regions) and regions[-1].device == "cuda") or self.in_cuda_custom_function(site)

    def in_cuda_custom_function(self, site: CallSite) -> bool:
        """``site`` is in a ``forward``/``backward`` decorated for CUDA autocast
        (``@torch.cuda.amp.custom_fwd``, ``@torch.amp.custom_bwd(device_type="cuda")``): the
        decorator itself reads CUDA's autocast state, so the function is written for CUDA."""
        function = self.facts.callgraph.function_of(site.ctx.scope)
        if function is None:
            return False
        for decorator in function.node.decorators:
            expr = decorator.decorator
            call = expr if isinstance(expr, cst.Call) else None
            qualname = self.facts.bindings.qualname(call.func if call is not None else expr, function.ctx.scope)
            if qualname in _CUDA_CUSTOM_DECORATORS:
                return True
            if qualname in _CUSTOM_DECORATORS and call is not None and is_cuda_literal(S.keyword_arg_value(call, "device_type")):
                return True
        return False

    def device_check_fallback(self, site: CallSite) -> bool:
        """``site`` is a fallback for old torch: the arm run instead of its own (the ``try`` of
        its ``except``, the other part of its ``if``) checks autocast with a device type."""
        for branch in site.ctx.branches:
            other = _other_arm(branch)
            if other is None:
                continue
            if any(check.node.args and other in check.ctx.branches for check in self.autocast_state_checks):
                return True
        return False

    def device_type_at_hand(self, scope: Scope) -> tuple[str, cst.BaseExpression | None] | None:
        """How the function of ``scope`` knows a device type other than a literal ``"cuda"``:
        ``("parameter", None)`` for a ``device_type`` parameter, ``("autocast", node)`` for its
        own autocast region's device, ``("assignment", None)`` when it sets ``device_type``."""
        function = self.facts.callgraph.function_of(scope)
        if function is None:
            return None
        if "device_type" in function.params:
            return "parameter", None
        for autocast in self.facts.autocast.autocast_calls:
            node = autocast.region.device_node
            if autocast.site.ctx.scope is scope and node is not None and not is_cuda_literal(node):
                return "autocast", node
        if any("device_type" in a.targets for a in self.facts.assignments_in(scope)):
            return "assignment", None
        return None
