"""Name resolution over the recorded bindings: what a name or a dotted expression refers to."""

from __future__ import annotations

from functools import cached_property
from typing import Iterator

import libcst as cst

import amplint.semantic.syntax as S
from amplint.semantic.records import Assignment, Binding, ImportRecord, Reference, Scope


class BindingQueries:
    """The ``model.bindings`` service of :class:`~amplint.semantic.model.SemanticModel`; reads ``scopes``, ``imports``,
    ``assignments`` and ``references``."""

    def __init__(self, model: "SemanticModel") -> None:
        self.model = model

    def bindings_of(self, name: str, scope: Scope) -> list[Binding]:
        """The bindings of ``name`` in the nearest scope that binds it, as Python resolves names
        (class bodies are skipped from nested functions)."""
        current: Scope | None = scope
        first = True
        while current is not None:
            if current.kind == "class" and not first:
                current = current.parent
                continue
            found = current.bindings.get(name)
            if found:
                return found
            first = False
            current = current.parent
        return []

    def lookup(self, name: str, scope: Scope) -> str | None:
        """The qualified name an unqualified ``name`` is imported as, seen from ``scope``.

        Only when every binding of the name there is the same import: a name also assigned,
        or imported twice differently, resolves to nothing.
        """
        found = self.bindings_of(name, scope)
        if not found:
            return self.star_target(name)
        if any(not b.is_import for b in found):
            return None
        targets = {b.target for b in found}
        return next(iter(targets)) if len(targets) == 1 else None

    def star_target(self, name: str) -> str | None:
        """What a ``from pkg.mod import *`` of the module binds ``name`` to, for a name the module
        never binds itself: the only way it can exist when the code runs. Asked of the project
        (``model.star_names``), once per name; ``None`` without a star import or an answer."""
        if not self.has_star_import or self.model.star_names is None:
            return None
        if name not in self._star_targets:
            self._star_targets[name] = self.model.star_names(name)
        return self._star_targets[name]

    @cached_property
    def has_star_import(self) -> bool:
        return any(isinstance(r.node, cst.ImportFrom) and isinstance(r.node.names, cst.ImportStar) and r.scope.kind == "module"
                   for r in self.model.imports)

    @cached_property
    def _star_targets(self) -> dict[str, str | None]:
        return {}

    def import_targets(self, name: str, scope: Scope) -> set[str]:
        """The qualified names ``name`` may be imported as, seen from ``scope``, when every binding
        of it there is an import (``try: from torch.amp import GradScaler / except ImportError:
        from torch.cuda.amp import GradScaler`` gives both); empty otherwise."""
        found = self.bindings_of(name, scope)
        if not found or any(not b.is_import or b.target is None for b in found):
            return set()
        return {self.model.canonical_name(b.target) for b in found}

    def import_binding(self, name: str, scope: Scope) -> tuple[ImportRecord, cst.ImportAlias, str] | None:
        """The import statement and alias that bind ``name`` as seen from ``scope``."""
        found = self.bindings_of(name, scope)
        if not found or self.lookup(name, scope) is None:
            return None
        owner = found[0].scope
        for record in reversed(self.model.imports):
            if record.scope is owner:
                for alias, bound, target in record.aliases:
                    if bound == name:
                        return record, alias, target
        return None

    def qualname(self, node: cst.CSTNode, scope: Scope) -> str | None:
        """``torch.amp.GradScaler`` for ``amp.GradScaler`` after ``from torch import amp``."""
        parts = S.dotted_parts(node)
        if not parts:
            return None
        head = self.lookup(parts[0], scope)
        if head is None:
            return None
        return self.model.canonical_name(".".join([head, *parts[1:]]))

    resolve = qualname

    @cached_property
    def import_bound_names(self) -> set[str]:
        return {name for scope in self.model.scopes for name, found in scope.bindings.items() if any(b.is_import for b in found)}

    @cached_property
    def imported_references(self) -> list[tuple[Reference, str]]:
        """Every reference that resolves to an import, with its canonical qualified name,
        resolved once for all queries."""
        bound = self.import_bound_names
        out: list[tuple[Reference, str]] = []
        stars = self.has_star_import and self.model.star_names is not None
        for ref in self.model.references:
            if ref.parts[0] in bound or (stars and not self.bindings_of(ref.parts[0], ref.ctx.scope)):
                qualname = self.qualname(ref.node, ref.ctx.scope)
                if qualname is not None:
                    out.append((ref, qualname))
        return out

    def references_to(self, predicate) -> Iterator[tuple[Reference, str]]:
        """References whose canonical qualified name satisfies ``predicate``."""
        return ((ref, qualname) for ref, qualname in self.imported_references if predicate(qualname))

    def attribute_bindings(self, class_scope: Scope | None, attribute: str) -> list[Binding]:
        """``self.<attribute> = ...`` assignments made in the methods of ``class_scope``."""
        return list(class_scope.attributes.get(attribute, ())) if class_scope is not None else []
