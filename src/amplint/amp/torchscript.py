"""TorchScript: functions compiled by ``torch.jit``, which accepts only part of the Python API."""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from amplint.semantic.records import CallSite, FunctionInfo

JIT_SCRIPTING = frozenset({"torch.jit.script", "torch.jit.script_method", "torch.jit.interface"})


class ScriptFacts:
    """The ``facts.torchscript`` service of :class:`~amplint.amp.facts.FileFacts`."""

    def __init__(self, facts: "FileFacts") -> None:
        self.facts = facts

    def is_scripted(self, function: FunctionInfo) -> bool:
        """``function`` is decorated with ``@torch.jit.script`` (or ``script_method``, ``interface``)."""
        for decorator in function.node.decorators:
            expr = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
            if self.facts.bindings.qualname(expr, function.ctx.scope) in JIT_SCRIPTING:
                return True
        return False

    @cached_property
    def uses_torchscript(self) -> bool:
        """The file scripts some code: ``torch.jit.script(f)`` or a scripted function. Any function
        it calls may then be compiled too, so its calls must stay valid TorchScript."""
        return any(site.qualname in JIT_SCRIPTING for site in self.facts.calls) or any(
            self.is_scripted(function) for function in self.facts.functions
        )
