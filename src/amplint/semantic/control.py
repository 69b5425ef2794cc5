"""Control-flow questions about recorded places (:class:`~amplint.semantic.records.Context`).

The service the rules ask "does this run before that, on which paths": one
:class:`~amplint.semantic.cfg.FlowGraph` per function (and for the module body), built when
first asked. A place is anchored at its statement node; two places in one statement are
ordered as Python evaluates them (the walk's numbering), which is the one use of that
numbering left, and it stays in here.

Every question is about places in one function: for places in different functions, or in a
body that has no graph, :meth:`ControlFlow.relation_unknown` is true and the yes/no questions
answer ``False`` (nothing is proven), except :meth:`may_run_together`, which cannot rule the
pair out and says ``True``.
"""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from amplint.semantic.cfg import FlowGraph
from amplint.semantic.paths import PathQueries
from amplint.semantic.records import Context, Scope
from amplint.semantic.syntax import bound_names


class ControlFlow:
    def __init__(self, model) -> None:
        self._model = model
        self._queries: dict[int, PathQueries | None] = {}
        self._reads: dict[str, frozenset[str]] = {}  # a test's text -> the dotted names it reads

    # -- the questions
    def reaches(self, a: Context, b: Context, across_iterations: bool = False) -> bool:
        """``b`` can run after ``a`` on a feasible path (within one loop iteration by default)."""
        pair = self._pair(a, b)
        if pair is None:
            return False
        paths, x, y = pair
        if x is y:
            return a.order < b.order or (across_iterations and paths.reaches(x, x, across_iterations=True))
        return paths.reaches(x, y, across_iterations, focus=self._tests_around(a) | self._tests_around(b))

    def _tests_around(self, ctx: Context) -> frozenset[str]:
        """The texts of the ``if``/``while`` tests around a place."""
        nodes = (*(b.node for b in ctx.branches), *(loop.node for loop in ctx.loops))
        return frozenset(self._test_key(n.test)[0] for n in nodes if getattr(n, "test", None) is not None)

    def reaches_avoiding(self, a: Context, b: Context, avoid: list[Context]) -> bool:
        """``b`` can run after ``a`` in one iteration without any of ``avoid`` running between them."""
        pair = self._pair(a, b)
        if pair is None:
            return False
        paths, x, y = pair
        stops = []
        for other in avoid:
            z = self.anchor(other) if other.scope is a.scope else None
            if z is None or z not in paths.graph:
                continue
            if x is y and z is x:
                if a.order < other.order < b.order:
                    return False
            elif (z is x and other.order > a.order) or (z is y and other.order < b.order):
                return False
            elif z is not x and z is not y:
                stops.append(z)
        if x is y:
            return a.order < b.order
        return paths.reaches_avoiding(x, y, stops)

    def last_before(self, candidates: list[Context], b: Context) -> list[Context]:
        """The ``candidates`` that run before ``b`` with no other candidate between them on some
        feasible path (the last of them before ``b``, one per branch)."""
        paths = self.queries(b.scope)
        y = self.anchor(b)
        if paths is None or y not in paths.graph:
            return []
        # One walk back from ``b`` rules out, at once, every candidate some other candidate hides;
        # the exact question is asked only of those left.
        anchors = [self.anchor(c) for c in candidates if c.scope is b.scope]
        behind = paths.reached_backwards(y, [z for z in anchors if z is not None and z is not y])
        return [
            c for c in candidates
            if c.scope is b.scope and (self.anchor(c) is y or id(self.anchor(c)) in behind)
            and self.reaches_avoiding(c, b, [other for other in candidates if other is not c])
        ]

    def reaching_assignments(self, name: str, ctx: Context) -> list:
        """The assignments to the dotted ``name`` in ``ctx``'s function whose value ``name`` may
        still hold at ``ctx``: each runs before it on some feasible path with no other assignment
        to ``name`` in between (one iteration; a name only assigned in another scope has none)."""
        candidates = [a for a in self._model.assignments_to(name, ctx.scope) if a.ctx.scope is ctx.scope and name in a.targets]
        if not candidates:
            return []
        reaching = {id(c) for c in self.last_before([a.ctx for a in candidates], ctx)}
        return [a for a in candidates if id(a.ctx) in reaching]

    def pass_may_skip(self, loop: cst.For | cst.While, ctx: Context) -> bool:
        """A pass through ``loop`` may end early (its own ``continue`` or ``break``) before ``ctx``
        runs; ``True`` when the graph cannot tell."""
        paths = self.queries(ctx.scope)
        y = self.anchor(ctx)
        if paths is None or y not in paths.graph or loop not in paths.graph:
            return True
        ends = paths.graph.early_ends.get(loop, [])
        return any(end is not y and paths.reaches_avoiding(loop, end, [y]) for end in ends)

    def may_run_together(self, a: Context, b: Context) -> bool:
        """``a`` and ``b`` may both run in one pass through their body (one loop iteration)."""
        pair = self._pair(a, b)
        if pair is None:
            return True  # nothing proven either way
        paths, x, y = pair
        return x is y or paths.reaches(x, y) or paths.reaches(y, x)

    def dominates(self, a: Context, b: Context) -> bool:
        """Every path from the body's start to ``b`` runs ``a`` first."""
        return self._always(a, b, PathQueries.dominates)

    def on_every_path(self, a: Context, b: Context) -> bool:
        """Every path that runs ``a`` runs ``b`` after it, in the same iteration (raising aside)."""
        return self._always(a, b, PathQueries.on_every_path)

    def _always(self, a: Context, b: Context, question) -> bool:
        """``question(paths, x, y)`` for the two places' statements; in one statement, ``a`` always
        comes first when Python evaluates it first."""
        pair = self._pair(a, b)
        if pair is None:
            return False
        paths, x, y = pair
        return a.order < b.order if x is y else question(paths, x, y)

    def between(self, a: Context, via: Context, b: Context) -> bool:
        """A feasible path runs ``a``, then ``via``, then ``b`` (in one iteration)."""
        pair, other = self._pair(a, b), self._pair(a, via)
        if pair is None or other is None:
            return False
        paths, x, y = pair
        v = other[2]
        if x is y:
            return v is x and a.order < via.order < b.order
        if v is x:
            return a.order < via.order and paths.reaches(x, y)
        if v is y:
            return via.order < b.order and paths.reaches(x, y)
        return paths.between(x, v, y)

    def relation_unknown(self, a: Context, b: Context) -> bool:
        """No graph holds both places: the questions above can prove nothing about them."""
        return self._pair(a, b) is None

    # -- graphs
    def queries(self, scope: Scope) -> PathQueries | None:
        """The path questions of ``scope``'s body; ``None`` when it has no graph of its own."""
        key = id(scope)
        if key not in self._queries:
            body = scope.node
            if not isinstance(body, (cst.Module, cst.FunctionDef)):
                self._queries[key] = None
            else:
                self._queries[key] = PathQueries(FlowGraph.of_body(body), self._test_key, self._reads.get, self._assigned)
        return self._queries[key]

    @staticmethod
    def anchor(ctx: Context) -> cst.CSTNode | None:
        return ctx.suite if ctx.suite is not None else ctx.stmt

    def _pair(self, a: Context, b: Context):
        if a.scope is not b.scope:
            return None
        paths = self.queries(a.scope)
        if paths is None:
            return None
        x, y = self.anchor(a), self.anchor(b)
        if x not in paths.graph or y not in paths.graph:
            return None
        return paths, x, y

    # -- what tests read and statements assign
    def _test_key(self, test: cst.BaseExpression) -> tuple[str, bool] | None:
        text, negated = self._model.tree.condition_key(test)
        if text not in self._reads:
            self._reads[text] = frozenset(".".join(r.parts) for r in self._model.references_within(test))
        return text, negated

    def _assigned(self, node: object) -> frozenset[str]:
        return self._assignments_by_anchor.get(node, frozenset())

    def assigned_in(self, scope: Scope) -> list[tuple[object, frozenset[str]]]:
        """The statement nodes of ``scope``'s body that bind names, with the dotted names each
        binds (assignments, loop targets, ``with ... as``)."""
        return self._assigned_by_scope.get(id(scope), [])

    @cached_property
    def _assigned_by_scope(self) -> dict[int, list[tuple[object, frozenset[str]]]]:
        scopes: dict[object, int] = {}
        for assignment in self._model.assignments:
            scopes.setdefault(self.anchor(assignment.ctx), id(assignment.ctx.scope))
        for loop in self._model.loops:
            scopes.setdefault(loop.node, id(loop.scope))
        for node, ctx in self._model.records.withs:
            scopes.setdefault(node, id(ctx.scope))
        out: dict[int, list[tuple[object, frozenset[str]]]] = {}
        for node, names in self._assignments_by_anchor.items():
            if node in scopes:
                out.setdefault(scopes[node], []).append((node, names))
        return out

    @cached_property
    def _assignments_by_anchor(self) -> dict[object, frozenset[str]]:
        found: dict[object, set[str]] = {}
        for assignment in self._model.assignments:
            found.setdefault(self.anchor(assignment.ctx), set()).update(assignment.targets)
        for loop in self._model.loops:
            found.setdefault(loop.node, set()).update(loop.target_names)
        for node, _ in self._model.records.withs:
            for item in node.items:
                if item.asname is not None:
                    found.setdefault(node, set()).update(bound_names(item.asname.name))
        return {node: frozenset(names) for node, names in found.items()}
