"""What rules ask the project: which function a call reaches, and what that function does.

:class:`ProjectView` answers for one file, from its own summary (helpers defined in the same
file, ``self.`` methods of the same class) and its :class:`~amplint.project.context.ProjectContext`
(helpers imported from another module of the project). A call resolves only when its head name
is bound at module level by a ``def``, a ``class`` or an import and nowhere closer: a local
``save_checkpoint = ...`` or a parameter of that name resolves to nothing.

Typical questions::

    callee = facts.project.callee(site)          # Callee(function=FunctionSummary, module="utils.py")
    facts.project.call_reaches(site, "unscales")  # does the called helper unscale?
"""

from __future__ import annotations

from dataclasses import dataclass

from amplint.project.context import ProjectContext
from amplint.project.records import FunctionSummary, ModuleSummary

_MODULE_LEVEL_KINDS = ("IMPORT", "DEF", "CLASS")


@dataclass(frozen=True)
class Callee:
    function: FunctionSummary
    module: str  # "" for the file itself, else the module's path relative to the project root

    @property
    def where(self) -> str:
        """``save_checkpoint`` in ``utils.py`` (line 12), for messages."""
        place = f" in {self.module}" if self.module else ""
        return f"`{self.function.name}`{place} (line {self.function.line})"


class ProjectView:
    def __init__(self, facts, own: ModuleSummary, context: ProjectContext | None = None) -> None:
        self.facts = facts
        self.own = own
        self.context = context

    def callee(self, site) -> Callee | None:
        """The function ``site`` (a :class:`~amplint.semantic.records.CallSite`) calls, when the
        project shows it."""
        parts = (site.func_text or "").split(".")
        if not parts or not parts[0]:
            return None
        head = parts[0]
        facts = self.facts
        if head == "self" and len(parts) == 2:
            function = facts.function_of(site.ctx.scope)
            owner = function.class_name if function is not None else None
            found = self.own.function(f"{owner}.{parts[1]}") if owner else None
            return Callee(found, "") if found is not None else None
        bindings = facts.bindings_of(head, site.ctx.scope)
        if not bindings or any(b.scope.kind != "module" or b.kind.name not in _MODULE_LEVEL_KINDS for b in bindings):
            return None
        kinds = {b.kind.name for b in bindings}
        if kinds <= {"DEF"} and len(parts) == 1 and head in self.own.defined:
            found = self.own.function(head)
            return Callee(found, "") if found is not None else None
        if kinds != {"IMPORT"} or self.context is None:
            return None
        target = self.context.target(head)
        if target is None:
            return None
        summary = self.context.module(target.module)
        if summary is None:
            return None
        if target.attribute is not None and len(parts) == 1:
            name = target.attribute
        elif target.attribute is None and len(parts) == 2:
            name = parts[1]
        else:
            return None
        found = summary.function(name)
        return Callee(found, target.module) if found is not None else None

    def call_reaches(self, site, effect: str) -> bool:
        """The call at ``site`` reaches a project function with ``effect`` (see
        :data:`~amplint.project.records.EFFECTS`: ``"unscales"``, ``"steps"``, ``"saves_scaler"``...)."""
        callee = self.callee(site)
        return callee is not None and callee.function.has(effect)

    def visible_saves(self):
        """``(module, function, SavedCheckpoint)`` for every ``torch.save`` of this file and of
        the modules it imports."""
        sources = [("", self.own)]
        if self.context is not None:
            sources.extend(self.context.modules)
        for module, summary in sources:
            for function in summary.functions:
                for save in function.saves:
                    yield module, function, save
