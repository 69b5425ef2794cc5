"""The possible values of an expression, as far as the syntax and the file's assignments show.

:func:`alternatives` is the one walker: every question here about what an expression may
evaluate to goes through it, so conditional expressions, boolean operators and literal dict
lookups are followed the same way everywhere.
"""

from __future__ import annotations

from functools import cached_property

import libcst as cst

import amplint.semantic.syntax as S
from amplint.semantic.records import Assignment, BindingKind, CallSite, FunctionInfo, Scope


def alternatives(value: cst.BaseExpression | None, *, conditionals: bool = True, booleans: bool = True,
                 subscripts: bool = False) -> list[cst.BaseExpression]:
    """The expressions ``value`` may evaluate to, innermost first and left to right.

    Follows the arms of ``a if c else b`` (``conditionals``), the operands of ``a or b`` /
    ``a and b`` (``booleans``) and the values of a literal dict looked up by key,
    ``{"a": x, "b": y}[k]`` (``subscripts``). Anything else is its own single alternative;
    ``None`` has none.
    """
    if value is None:
        return []

    def walk(node: cst.BaseExpression) -> list[cst.BaseExpression]:
        if conditionals and isinstance(node, cst.IfExp):
            return walk(node.body) + walk(node.orelse)
        if booleans and isinstance(node, cst.BooleanOperation):
            return walk(node.left) + walk(node.right)
        if subscripts and isinstance(node, cst.Subscript) and isinstance(node.value, cst.Dict):
            elements = node.value.elements
            if elements and all(isinstance(e, cst.DictElement) for e in elements):
                return [leaf for e in elements for leaf in walk(e.value)]  # type: ignore[union-attr]
        return [node]

    return walk(value)


def value_calls(value: cst.BaseExpression | None) -> list[cst.Call]:
    """Calls that ``value`` may evaluate to, through ``a if c else b`` and ``a or b``."""
    return [leaf for leaf in alternatives(value) if isinstance(leaf, cst.Call)]


def is_choice(value: cst.BaseExpression | None) -> bool:
    """``value`` picks one of several expressions (a conditional or boolean expression)."""
    return isinstance(value, (cst.IfExp, cst.BooleanOperation))


class ValueQueries:
    """The ``model.values`` service of :class:`~amplint.semantic.model.SemanticModel`: what names hold, from their assignments.

    Reads ``assignments`` and ``scopes`` and asks ``call_site`` and ``assignments_to``.
    """

    def __init__(self, model: "SemanticModel") -> None:
        self.model = model

    def sole_assignments(self, key: str, scope: Scope) -> list[Assignment]:
        """The assignments that bind ``key`` where ``scope`` reads it, when nothing else binds it.

        A plain name is looked up in ``scope`` when that function binds it, else at module
        level; it counts only when every binding there is an assignment the walk recorded (no
        parameter, loop variable, import or ``del`` of the same name), since only then are its
        values known. ``self.x`` counts the assignments in the methods of the same class. Any
        other dotted key has none.
        """
        if key.startswith("self."):
            return self.model.assignments_to(key, scope) if key.count(".") == 1 else []
        if "." in key:
            return []
        owner = scope if scope.kind == "function" and key in scope.bindings else self.model.scopes[0]
        bindings = owner.bindings.get(key, [])
        found = [a for a in self.model.assignments if key in a.targets and a.ctx.scope is owner]
        if not bindings or any(b.kind is not BindingKind.ASSIGNMENT for b in bindings) or len(found) != len(bindings):
            return []
        return found

    def assigned_alternatives(self, key: str, scope: Scope, **walk) -> list[tuple[Assignment, cst.BaseExpression | None]]:
        """Each value ``key`` may hold where ``scope`` reads it, with the assignment it comes
        from: the :func:`alternatives` (``walk`` are its options) of each of its
        :meth:`sole_assignments`, in source order. An assignment whose value is not known
        (unpacking, augmented assignment) comes with ``None``."""
        out: list[tuple[Assignment, cst.BaseExpression | None]] = []
        for assignment in self.sole_assignments(key, scope):
            leaves: list[cst.BaseExpression | None] = list(alternatives(assignment.value, **walk)) or [None]
            out.extend((assignment, leaf) for leaf in leaves)
        return out

    def parameter_values(self, function: FunctionInfo, name: str) -> list[tuple[cst.BaseExpression, Scope]] | None:
        """What the parameter ``name`` of ``function`` may hold, as far as this file shows: its
        default and the argument each same-file call passes for it, each with the scope the
        expression is read in. ``None`` when a call hides which argument is which (``*args``,
        ``**kwargs``). Calls through ``self.``/``obj.`` skip a method's ``self`` parameter."""
        params = function.node.params
        param = next((p for p in (*params.posonly_params, *params.params, *params.kwonly_params) if p.name.value == name), None)
        if param is None:
            return None
        out: list[tuple[cst.BaseExpression, Scope]] = []
        if param.default is not None:
            out.append((param.default, function.ctx.scope))
        positional = [p.name.value for p in (*params.posonly_params, *params.params)]
        for site in self.model.callgraph.callers_of(function):
            call = site.node
            if S.has_star_args(call):
                return None
            index = positional.index(name) if name in positional else None
            if index is not None and function.class_name is not None and isinstance(call.func, cst.Attribute):
                index = index - 1 if index > 0 else None
            value = S.argument(call, index, name)
            if value is not None:
                out.append((value, site.ctx.scope))
        return out

    @cached_property
    def _construction_targets(self) -> dict[str, list[str | None]]:
        out: dict[str, list[str | None]] = {}
        for assignment in self.model.assignments:
            value = assignment.value
            site = self.model.call_site(value) if isinstance(value, cst.Call) else None
            for target in assignment.targets:
                out.setdefault(target, []).append(site.qualname if site is not None else None)
        return out

    def names_built_by(self, classes: frozenset[str]) -> set[str]:
        """Dotted names (``criterion``, ``self.loss_fn``) every assignment of which, anywhere in
        the file, is a call of one of ``classes`` (canonical qualified names)."""
        return {target for target, built in self._construction_targets.items() if all(q in classes for q in built)}

    def instance_calls(self, classes: frozenset[str]) -> list[CallSite]:
        """Calls of an object built from one of ``classes``: through a name every assignment of
        which builds one (``criterion = nn.BCELoss()`` ... ``criterion(p, y)``), or inline
        (``nn.BCELoss()(p, y)``); in source order."""
        instances = self.names_built_by(classes)
        out = []
        for site in self.model.calls:
            if site.func_text is not None and site.func_text in instances:
                out.append(site)
            elif isinstance(site.node.func, cst.Call):
                inner = self.model.call_site(site.node.func)
                if inner is not None and inner.qualname in classes:
                    out.append(site)
        return out
