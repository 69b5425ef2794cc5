"""What rules ask the project: which function a call reaches, and what that function does.

:class:`ProjectView` answers for one file, from its own summary (helpers defined in the same
file, ``self.`` methods of the same class) and its :class:`~amplint.project.context.ProjectContext`
(helpers imported from another module of the project). A call resolves only when its head name
is bound at module level by a ``def``, a ``class`` or an import and nowhere closer: a local
``save_checkpoint = ...`` or a parameter of that name resolves to nothing.

Typical questions::

    callee = facts.project.callee(site)          # Callee(function=FunctionSummary, module="utils.py")
    facts.project.call_reaches(site, "unscales")  # does the called helper unscale?
    facts.project.config_precision("ds.json")     # "fp16": the DeepSpeed config file enables it
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from amplint.project.context import ProjectContext
from amplint.project.deferred import DeferredContext
from amplint.project.records import FunctionSummary, ModuleSummary

_MODULE_LEVEL_KINDS = ("IMPORT", "DEF", "CLASS")


@dataclass(frozen=True)
class Callee:
    function: FunctionSummary
    module: str  # "" for the file itself, else the module's path relative to the calling file's folder

    @property
    def where(self) -> str:
        """``save_checkpoint`` in ``utils.py`` (line 12), for messages."""
        if not self.function.line:  # a library's, summarised by hand
            return f"{self.module}'s `{self.function.name}`"
        place = f" in {self.module}" if self.module else ""
        return f"`{self.function.name}`{place} (line {self.function.line})"


class ProjectView:
    def __init__(self, facts, own: ModuleSummary | Callable[[], ModuleSummary],
                 context: ProjectContext | DeferredContext | None = None) -> None:
        self.facts = facts
        self._own = own  # the file's own summary, or how to make it when first asked
        self._context = context

    @property
    def context(self) -> ProjectContext | None:
        """What the file's imports reach (read now if it was deferred)."""
        context = self._context
        return context.get() if isinstance(context, DeferredContext) else context

    def _context_reaching(self, local: str, building_scaler: bool = False) -> ProjectContext | None:
        """What the import ``local`` reaches (a deferred context summarises only the module it
        names), unless it cannot reach the project (or, with ``building_scaler``, cannot name a
        class that builds a GradScaler): then ``None``, and a deferred context stays unread."""
        context = self._context
        if isinstance(context, DeferredContext):
            if not context.reaches(local) or (building_scaler and not context.may_build_scaler(local)):
                return None
            return context.get_for(local)
        return context

    @cached_property
    def own(self) -> ModuleSummary:
        return self._own if isinstance(self._own, ModuleSummary) else self._own()

    def callee(self, site) -> Callee | None:
        """The function ``site`` (a :class:`~amplint.semantic.records.CallSite`) calls, when the
        project shows it."""
        parts = (site.func_text or "").split(".")
        if not parts or not parts[0]:
            return None
        head = parts[0]
        facts = self.facts
        if head == "self" and len(parts) == 2:
            function = facts.callgraph.function_of(site.ctx.scope)
            owner = function.class_name if function is not None else None
            found = self.own.function(f"{owner}.{parts[1]}") if owner else None
            return Callee(found, "") if found is not None else None
        found = self._resolve(site)
        if found is None:
            return None
        module, summary, name = found
        function = summary.function(name)
        return Callee(function, module) if function is not None else None

    def builds_scaler(self, site) -> bool:
        """``site`` constructs a project class that builds a GradScaler (a ``NativeScaler``-style wrapper)."""
        found = self._resolve(site, building_scaler=True)
        return found is not None and found[2] in found[1].scaler_classes

    def _resolve(self, site, building_scaler: bool = False) -> tuple[str, ModuleSummary, str] | None:
        """(module path, its summary, name) for a call of a module-level name defined or imported
        here; the path is "" for this file. ``building_scaler``: only a name that may build a
        GradScaler is looked for in the project."""
        parts = (site.func_text or "").split(".")
        bindings = self.facts.bindings.bindings_of(parts[0], site.ctx.scope) if parts[0] else []
        if not bindings or any(b.scope.kind != "module" or b.kind.name not in _MODULE_LEVEL_KINDS for b in bindings):
            return None
        kinds = {b.kind.name for b in bindings}
        if kinds <= {"DEF", "CLASS"}:
            return ("", self.own, parts[0]) if len(parts) == 1 and parts[0] in self.own.defined else None
        context = self._context_reaching(parts[0], building_scaler) if kinds == {"IMPORT"} else None
        if context is None:
            return None
        target = context.target(parts[0])
        summary = context.module(target.module) if target is not None else None
        if summary is None:
            return None
        if target.attribute is not None and len(parts) == 1:
            return target.module, summary, target.attribute
        if target.attribute is None and len(parts) == 2:
            return target.module, summary, parts[1]
        return None

    def call_reaches(self, site, effect: str) -> bool:
        """The call at ``site`` reaches a project function with ``effect`` (see
        :data:`~amplint.project.records.EFFECTS`: ``"unscales"``, ``"steps"``, ``"saves_scaler"``...)."""
        callee = self.callee(site)
        return callee is not None and callee.function.has(effect)

    def config_precision(self, literal: str) -> str | None:
        """``"fp16"``/``"bf16"``/``"torch_autocast-fp16"`` when the DeepSpeed config file that the path
        ``literal`` names in the project enables it (:mod:`amplint.project.configs`); ``None`` when it
        enables none of them, cannot be known, or the file is linted without a project (standard
        input, ``lint_source``, flake8, the language server): then nothing is read."""
        context = self._context
        return context.config_precision(literal) if isinstance(context, DeferredContext) else None

    def visible_saves(self):
        """``(module, function, SavedCheckpoint)`` for every ``torch.save`` of this file and of
        the modules it imports."""
        yield from self.own_saves()
        yield from self.imported_saves()

    def own_saves(self):
        """:meth:`visible_saves` of this file (``module`` is ``""``)."""
        yield from _saves("", self.own)

    def imported_saves(self):
        """:meth:`visible_saves` of the modules this file imports (summarising them)."""
        context = self.context
        for module, summary in context.modules if context is not None else ():
            yield from _saves(module, summary)


def _saves(module: str, summary: ModuleSummary):
    for function in summary.functions:
        for save in function.saves:
            yield module, function, save
