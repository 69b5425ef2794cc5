"""Blocks only named like autocast (``with amp_autocast():``, ``with self.autocast_ctx:``): whether
the name can hold an autocast, from the values this file gives it."""

from __future__ import annotations

import libcst as cst

import amplint.amp.catalogue as API
from amplint.amp.autocast import AutocastRegion
import amplint.semantic.syntax as S
from amplint.semantic.records import Scope
from amplint.semantic.values import alternatives


class NamedAutocastFacts:
    """The ``facts.named_autocast`` service of :class:`~amplint.amp.facts.FileFacts`; :class:`~amplint.amp.autocast.AutocastFacts`
    asks :meth:`region_of_named` for a ``with`` item it cannot resolve."""

    def __init__(self, facts: "FileFacts") -> None:
        self.facts = facts

    def region_of_named(self, expr: cst.BaseExpression, scope: Scope) -> AutocastRegion | None:
        """``with amp_autocast():`` / ``with self.autocast_ctx:`` where nothing resolves: named like autocast."""
        target = expr.func if isinstance(expr, cst.Call) else expr
        text = S.dotted(target)
        if text is None or "autocast" not in text.rsplit(".", 1)[-1].lower():
            return None
        enabled = None
        if isinstance(expr, cst.Call):
            enabled_node = S.keyword_arg_value(expr, "enabled")
            if enabled_node is not None:
                enabled = S.bool_value(enabled_node)
        traced = self._traced_name_autocast(text, scope, isinstance(expr, cst.Call))
        return AutocastRegion(node=expr, call=None, device=None, dtype=None, enabled=enabled, resolved=False,
                              may_be_autocast=traced is not False)

    def _traced_name_autocast(self, text: str, scope: Scope, called: bool) -> bool | None:
        """Whether the name of a ``with`` item can hold an autocast: ``True`` when a value it may
        hold builds one; ``False`` for a parameter to which no value that can is passed, and for
        a same-file helper or assignments none of whose values can; ``None`` when nothing in the
        file says."""
        function = self.facts.callgraph.function_of(scope)
        if "." not in text and function is not None and text in function.params:
            # A parameter holds an autocast only where this file passes one (or defaults to one).
            passed = self.facts.values.parameter_values(function, text) or ()
            return any(self._value_may_be_autocast(v, s, called) for v, s in passed)
        if called:
            helpers = [f for f in self.facts.callgraph.functions_by_name.get(text.rsplit(".", 1)[-1], [])
                       if f.class_name is None or text.startswith(("self.", "cls."))]
            if helpers and (len(text.split(".")) == 1 or text.startswith(("self.", "cls."))):
                scopes = {f.scope for f in helpers}
                returns = [(v, c.scope) for v, c in self.facts.records.returns if c.scope in scopes]
                if not returns or any(c.scope in scopes for c in self.facts.records.yields):
                    return None
                verdicts = [self._value_may_be_autocast(v, s, False) for v, s in returns]
                return True if True in verdicts else (None if None in verdicts else False)
        assigned = self.facts.values.assigned_alternatives(text, scope)
        if not assigned:
            return None
        verdicts = [self._value_may_be_autocast(v, a.ctx.scope, called) if v is not None else None for a, v in assigned]
        return True if True in verdicts else (None if None in verdicts else False)

    def _value_may_be_autocast(self, value: cst.BaseExpression, scope: Scope, called: bool, depth: int = 0) -> bool | None:
        """``value`` builds an autocast (``called``: calling it does, as ``partial(torch.autocast, ...)``
        or the class itself): ``True``; known not to (``suppress``, ``nullcontext()``, ``None``): ``False``."""
        if S.is_none(value):
            return False
        leaves = alternatives(value)
        if len(leaves) > 1:
            verdicts = [self._value_may_be_autocast(leaf, scope, called, depth) for leaf in leaves]
            return True if True in verdicts else (None if None in verdicts else False)
        if isinstance(value, cst.Call):
            if self.facts.autocast.autocast_from_call(value, scope, depth + 1) is not None:
                return True
            qualname = self.facts.bindings.qualname(value.func, scope)
            if called and qualname in API.PARTIAL and value.args:
                return self._value_may_be_autocast(value.args[0].value, scope, True, depth + 1)
            return False if not called and qualname in API.NULL_CONTEXTS else None
        if S.dotted(value) is None:
            return None
        qualname = self.facts.bindings.qualname(value, scope)
        if called and qualname in API.AUTOCAST:
            return True
        if called and qualname in API.NULL_CONTEXTS:
            return False
        if depth < 2 and "." not in S.dotted(value):
            assigned = self.facts.values.assigned_alternatives(S.dotted(value), scope)
            verdicts = [self._value_may_be_autocast(v, a.ctx.scope, called, depth + 1) if v is not None else None
                        for a, v in assigned]
            if verdicts:
                return True if True in verdicts else (None if None in verdicts else False)
        return None
