"""The semantic model of one module: the walk's records plus the questions asked of them.

It knows nothing about torch. :class:`SemanticModel` runs the one walk
(:class:`~amplint.semantic.collector.Collector`), keeps its records (scopes, calls, assignments,
references, imports, functions, loops) and answers through small services, one per module:

- ``bindings`` (:mod:`amplint.semantic.bindings`): what a name or dotted expression resolves to;
- ``identity`` (:mod:`amplint.semantic.identity`): which variable a dotted text names at a place;
- ``tree`` (:mod:`amplint.semantic.flow`): containment, exclusive branches, blocks;
- ``control_flow`` (:mod:`amplint.semantic.control`): paths, reaching, dominance, correlated
  branches;
- ``callgraph`` (:mod:`amplint.semantic.callgraph`): same-file calls and their callers;
- ``values`` (:mod:`amplint.semantic.values`): the calls an expression may evaluate to;
- ``statements``, ``call_index``, ``import_uses``, ``handlers``: the next statement, calls by
  qualified name, references through an import, ``except`` clauses.

A service holds the model and asks the others through it (``self.model.bindings.qualname``);
none keeps state another reads.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable
from functools import cached_property

import libcst as cst
from libcst.metadata import CodeRange

from amplint.semantic.bindings import BindingQueries
from amplint.semantic.call_index import CallIndex
from amplint.semantic.callgraph import CallGraph
from amplint.semantic.collector import Collector
from amplint.semantic.control import ControlFlow
from amplint.semantic.flow import FlowQueries
from amplint.semantic.handlers import HandlerQueries
from amplint.semantic.identity import IdentityQueries
from amplint.semantic.import_uses import ImportUses
from amplint.semantic.statements import StatementQueries
from amplint.semantic.values import ValueQueries
from amplint.semantic.records import Assignment, CallSite, Context, Reference, Scope

# Entry numbers of records' nodes in ascending order, and each one's position in the record list.
_EntryIndex = tuple[list[int], list[int]]


class SemanticModel:
    def __init__(self, module: cst.Module, positions: dict[cst.CSTNode, CodeRange], path: str,
                 star_names: Callable[[str], str | None] | None = None):
        # What the module's ``from pkg.mod import *`` statements bind a name to, as far as the
        # caller can tell (the project pass): asked only for names the module never binds.
        self.star_names = star_names
        self.bindings = BindingQueries(self)
        self.identity = IdentityQueries(self)
        self.tree = FlowQueries(self)
        self.callgraph = CallGraph(self)
        self.values = ValueQueries(self)
        self.statements = StatementQueries(self)
        self.call_index = CallIndex(self)
        self.import_uses = ImportUses(self)
        self.handlers = HandlerQueries(self)
        self.module = module
        self.path = path
        self._positions = positions
        collector = Collector()
        collector.walk(module)
        self.records = collector
        self.scopes = collector.scopes
        self.calls = collector.calls
        self.assignments = collector.assignments
        self.references = collector.references
        self.imports = collector.imports
        self.functions = collector.functions
        self.function_by_node = collector.function_by_node
        self.loops = collector.loops
        self.parents = collector.parents
        self.spans = collector.spans
        for site in self.calls:
            site.qualname = self.bindings.qualname(site.node.func, site.ctx.scope)

    def canonical_name(self, qualname: str) -> str:
        """Hook for a domain layer to map re-exports to one spelling; identity here."""
        return qualname

    @cached_property
    def control_flow(self) -> ControlFlow:
        """What runs before what on which paths of a function (:mod:`amplint.semantic.control`)."""
        return ControlFlow(self)

    @staticmethod
    def in_walk_order(records: list, place=lambda record: record.ctx) -> list:
        """``records`` sorted as the walk met their places (``place(record)``: a ``Context``)."""
        return sorted(records, key=lambda record: place(record).order)

    # -- source
    def position(self, node: cst.CSTNode) -> CodeRange:
        return self._positions[node]

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    @cached_property
    def lines(self) -> list[str]:
        return self.module.code.splitlines()

    @cached_property
    def trailing_comments(self) -> list[cst.TrailingWhitespace]:
        """Every comment at the end of a line of code, in source order (a ``# noqa`` applies
        to its own line). Walked for on first use: only AMP100 asks."""
        found: list[cst.TrailingWhitespace] = []

        class Collect(cst.CSTVisitor):
            def visit_TrailingWhitespace(self, node: cst.TrailingWhitespace) -> None:
                if node.comment is not None:
                    found.append(node)

        self.module.visit(Collect())
        return found

    # -- records by node
    def call_site(self, node: cst.Call) -> CallSite | None:
        """The recorded :class:`CallSite` of a call node of this module."""
        return self.records.call_by_node.get(node)

    def calls_within(self, node: cst.CSTNode) -> list[CallSite]:
        """Call sites inside ``node`` (itself excluded), in source order."""
        return [s for s in self._inside(node, self.calls, self._calls_by_entry) if s.node is not node]

    def references_within(self, node: cst.CSTNode) -> list[Reference]:
        """Dotted-name references inside ``node``."""
        return self._inside(node, self.references, self._references_by_entry)

    @cached_property
    def _calls_by_entry(self) -> _EntryIndex | None:
        return self._entry_index(self.calls)

    @cached_property
    def _references_by_entry(self) -> _EntryIndex | None:
        return self._entry_index(self.references)

    def _entry_index(self, records: list) -> _EntryIndex | None:
        """``records`` (with a ``node``) ordered by when the walk entered their node, for range lookups."""
        keyed = []
        for order, record in enumerate(records):
            span = self.spans.get(record.node)
            if span is None:
                return None
            keyed.append((span[0], order))
        keyed.sort()
        return [entry for entry, _ in keyed], [order for _, order in keyed]

    def _inside(self, node: cst.CSTNode, records: list, index: _EntryIndex | None) -> list:
        """The members of ``records`` whose node lies inside ``node``, in their original order.

        A node the walk entered while inside ``node`` is a descendant of it: with the records
        ordered by entry, those are one slice (a file-wide scan per question was quadratic).
        """
        span = self.spans.get(node)
        if index is None or span is None:
            return [record for record in records if self.tree.within(record.node, node)]
        entries, orders = index
        first, last = bisect_left(entries, span[0]), bisect_right(entries, span[1])
        return [records[order] for order in sorted(orders[first:last]) if self.spans[records[order].node][1] <= span[1]]

    @cached_property
    def calls_by_stmt(self) -> dict[cst.CSTNode, list[CallSite]]:
        """Innermost statement -> the calls written in it (a compound's header calls too)."""
        out: dict[cst.CSTNode, list[CallSite]] = {}
        for site in self.calls:
            if site.ctx.stmt is not None:
                out.setdefault(site.ctx.stmt, []).append(site)
        return out

    @cached_property
    def with_contexts(self) -> dict[cst.With, Context]:
        """Where each ``with`` statement sits (its scope, loops, branches)."""
        return {node: ctx for node, ctx in self.records.withs}

    # -- assignments
    @cached_property
    def _assignments_by_target(self) -> dict[str, list[Assignment]]:
        # Queries come per function, so scanning every assignment each time is quadratic in the file.
        index: dict[str, list[Assignment]] = {}
        for assignment in self.assignments:
            for target in dict.fromkeys(assignment.targets):
                index.setdefault(target, []).append(assignment)
        return index

    @cached_property
    def _assignments_by_scope(self) -> dict[int, list[Assignment]]:
        index: dict[int, list[Assignment]] = {}
        for assignment in self.assignments:
            index.setdefault(id(assignment.ctx.scope), []).append(assignment)
        return index

    def assignments_in(self, scope: Scope) -> list[Assignment]:
        """The assignments whose scope is ``scope`` itself, in source order."""
        return self._assignments_by_scope.get(id(scope), [])

    def assignments_to(self, key: str, scope: Scope | None = None) -> list[Assignment]:
        """Assignments to the dotted text ``key``; seen from ``scope``: those in it or at module
        level, and for ``self.x`` those in methods of the same class."""
        out = list(self._assignments_by_target.get(key, ()))
        if scope is not None:
            if key.startswith("self."):
                own = self.identity.variable(key, scope)
                out = [a for a in out if own is not None and self.identity.variable(key, a.ctx.scope) == own]
            else:
                out = [a for a in out if a.ctx.scope is scope or a.ctx.scope.kind == "module"]
        return out
