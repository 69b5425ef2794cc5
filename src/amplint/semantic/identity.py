"""Which variable a dotted text names: the binding behind ``scaler`` or ``self.scaler`` at a place.

Two spellings name the same variable when they resolve to the same owner: the scope whose
binding of the head name Python would use (``scaler`` in ``train()`` and at module level are one
variable when ``train`` does not bind it), or, for ``self.x``, the class whose methods assign
``self.x`` (a subclass's methods see the attribute its base class's ``__init__`` sets).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import libcst as cst

from amplint.semantic.records import Binding, BindingKind, Context, Scope


@dataclass(frozen=True)
class Variable:
    owner: Scope  # the binding scope of the head name; for ``self.x``, the class owning ``x``
    text: str  # the dotted text (``self.scaler``, ``trainer.scaler``)


class IdentityQueries:
    """The ``model.identity`` service of :class:`~amplint.semantic.model.SemanticModel`; reads ``scopes`` and uses
    :meth:`~amplint.semantic.bindings.BindingQueries.bindings_of`."""

    def __init__(self, model: "SemanticModel") -> None:
        self.model = model

    @cached_property
    def module_scope(self) -> Scope:
        return self.model.scopes[0]

    @cached_property
    def classes_by_name(self) -> dict[str, list[Scope]]:
        out: dict[str, list[Scope]] = {}
        for scope in self.model.scopes:
            if scope.kind == "class":
                out.setdefault(scope.name, []).append(scope)
        return out

    def instance_class(self, scope: Scope) -> Scope | None:
        """The class whose instance ``self`` is in ``scope``: the method's class, also from a
        function nested in the method."""
        found = self.model.bindings.bindings_of("self", scope)
        if len(found) != 1 or found[0].kind is not BindingKind.PARAMETER:
            return None
        return found[0].scope.class_scope

    def base_classes(self, class_scope: Scope) -> list[Scope]:
        """Same-file classes named as bases of ``class_scope`` (``class B(A):``), unambiguous ones."""
        node = class_scope.node
        out: list[Scope] = []
        for base in node.bases if isinstance(node, cst.ClassDef) else ():
            if isinstance(base.value, cst.Name):
                candidates = self.classes_by_name.get(base.value.value, [])
                if len(candidates) == 1 and candidates[0] is not class_scope:
                    out.append(candidates[0])
        return out

    def attribute_owner(self, class_scope: Scope, attribute: str) -> Scope:
        """The class among ``class_scope`` and its same-file bases whose methods assign ``self.<attribute>``."""
        pending, seen = [class_scope], set()
        while pending:
            current = pending.pop(0)
            if id(current) in seen:
                continue
            seen.add(id(current))
            if attribute in current.attributes:
                return current
            pending.extend(self.base_classes(current))
        return class_scope

    def variable(self, text: str, scope: Scope) -> Variable | None:
        """The variable the dotted ``text`` names in ``scope``; None for ``self.x`` outside a method."""
        parts = text.split(".")
        if parts[0] == "self":
            class_scope = self.instance_class(scope)
            if class_scope is None:
                return None
            owner = self.attribute_owner(class_scope, parts[1]) if len(parts) > 1 else class_scope
            return Variable(owner, text)
        found: list[Binding] = self.model.bindings.bindings_of(parts[0], scope)
        return Variable(found[0].scope if found else self.module_scope, text)

    def same_variable(self, key: str, at: Context, seen_from: Context) -> bool:
        """Does the dotted text ``key`` at ``at`` name what it names at ``seen_from``?"""
        here = self.variable(key, at.scope)
        return here is not None and here == self.variable(key, seen_from.scope)
