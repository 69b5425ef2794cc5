"""The control-flow graph of one function or module body, one node per statement.

A node is a simple statement line (``a = f(); g()``), a one-line suite (the ``g()`` of
``if x: g()``), or the header of a compound statement (an ``if`` node stands for its test, a
``for`` node for taking the next item). ``try`` handlers and ``match`` cases are nodes of their
own. Nested functions are one node (their body is a graph of its own); class bodies run in
place, as Python runs them.

Edges leaving an ``if``/``while`` test (and an ``assert``, whose false edge raises) carry that
test and its value on the edge, so that
:mod:`amplint.semantic.paths` can rule out a path that takes two branches of the same unchanged
test different ways. A loop's back edges (the end of its body, ``continue``) are marked, and
each loop knows the edges that leave it when it is exhausted: "in the same iteration"
questions follow those instead of going round again.

What the graph leaves out, on purpose: an exception may leave any statement of a ``try`` body
for its handlers, and nothing else raises; ``return`` inside ``try`` goes straight to the exit
(its ``finally`` is not replayed); a ``with`` never suppresses an exception.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

ENTRY = "entry"
EXIT = "exit"
RAISE = "raise"


@dataclass(frozen=True, eq=False)
class Edge:
    target: object  # a statement node, EXIT or RAISE
    test: cst.BaseExpression | None = None  # the ``if``/``while`` test this edge depends on
    holds: bool = True  # the test's value when this edge is taken
    back: bool = False  # back to a loop's header: the end of its body, or ``continue``


@dataclass(frozen=True, eq=False)
class _Pending:
    """An edge whose source is known and whose target is the next statement to come."""

    source: object
    test: cst.BaseExpression | None = None
    holds: bool = True


@dataclass
class _LoopFrame:
    header: cst.CSTNode
    breaks: list[_Pending] = field(default_factory=list)


_TRY_TYPES = tuple(t for t in (cst.Try, getattr(cst, "TryStar", None)) if t is not None)
_LINES = (cst.SimpleStatementLine, cst.SimpleStatementSuite)


class FlowGraph:
    """Nodes, edges and loops of one body; build with :meth:`of_body`."""

    def __init__(self) -> None:
        self.successors: dict[object, list[Edge]] = {ENTRY: []}
        self.nodes: list[cst.CSTNode] = []  # in source order
        self.loop_headers: set[cst.CSTNode] = set()
        # loop header -> the edges into its body (the others leave the loop)
        self.body_edges: dict[cst.CSTNode, list[Edge]] = {}
        self.tests: list[cst.BaseExpression] = []  # every branch test, in source order
        # loop header -> its own ``continue``/``break`` lines (not those of a loop inside it)
        self.early_ends: dict[cst.CSTNode, list[cst.CSTNode]] = {}
        self._loops: list[_LoopFrame] = []

    @classmethod
    def of_body(cls, body: cst.CSTNode) -> "FlowGraph":
        """The graph of a ``Module``'s or ``FunctionDef``'s body."""
        graph = cls()
        ends = graph._suite(body.body, [_Pending(ENTRY)])
        graph._connect(ends, EXIT)
        return graph

    def __contains__(self, node: object) -> bool:
        return node in self.successors

    def exits_of(self, header: cst.CSTNode) -> list[Edge]:
        """The edges that leave loop ``header`` when it has no more iterations."""
        inside = self.body_edges.get(header, [])
        return [edge for edge in self.successors.get(header, []) if all(edge is not e for e in inside)]

    # -- building
    def _add(self, node: cst.CSTNode, incoming: list[_Pending]) -> None:
        self.successors.setdefault(node, [])
        self.nodes.append(node)
        self._connect(incoming, node)

    def _connect(self, incoming: list[_Pending], target: object, back: bool = False) -> None:
        for pending in incoming:
            self.successors[pending.source].append(Edge(target, pending.test, pending.holds, back))

    def _suite(self, body, incoming: list[_Pending]) -> list[_Pending]:
        """``body``: a suite node or a sequence of statements."""
        if isinstance(body, cst.SimpleStatementSuite):
            return self._line(body, incoming)
        statements = body.body if isinstance(body, cst.IndentedBlock) else body
        for statement in statements:
            incoming = self._statement(statement, incoming)
        return incoming

    def _statement(self, node: cst.CSTNode, incoming: list[_Pending]) -> list[_Pending]:
        if isinstance(node, _LINES):
            return self._line(node, incoming)
        if isinstance(node, cst.If):
            return self._if(node, incoming)
        if isinstance(node, (cst.For, cst.While)):
            return self._loop(node, incoming)
        if isinstance(node, _TRY_TYPES):
            return self._try(node, incoming)
        if isinstance(node, cst.With):
            self._add(node, incoming)
            return self._suite(node.body, [_Pending(node)])
        if isinstance(node, cst.ClassDef):
            self._add(node, incoming)
            return self._suite(node.body, [_Pending(node)])
        if type(node).__name__ == "Match":
            self._add(node, incoming)
            ends = [_Pending(node)]  # no case matched
            for case in node.cases:
                self._add(case, [_Pending(node)])
                ends += self._suite(case.body, [_Pending(case)])
            return ends
        self._add(node, incoming)  # a nested def, or a statement kind not known here
        return [_Pending(node)]

    def _line(self, node: cst.CSTNode, incoming: list[_Pending]) -> list[_Pending]:
        self._add(node, incoming)
        for small in node.body:
            if isinstance(small, cst.Return):
                self._connect([_Pending(node)], EXIT)
                return []
            if isinstance(small, cst.Raise):
                self._connect([_Pending(node)], RAISE)
                return []
            if isinstance(small, (cst.Break, cst.Continue)) and self._loops:
                self.early_ends.setdefault(self._loops[-1].header, []).append(node)
            if isinstance(small, cst.Break) and self._loops:
                self._loops[-1].breaks.append(_Pending(node))
                return []
            if isinstance(small, cst.Continue) and self._loops:
                self._connect([_Pending(node)], self._loops[-1].header, back=True)
                return []
        asserted = [small.test for small in node.body if isinstance(small, cst.Assert)]
        if asserted:
            # ``assert x`` goes on only where ``x`` holds: a later ``if x:`` on the same unchanged
            # test is taken the same way (``assert not args.fsdp`` after ``if args.fsdp: FSDP(...)``).
            test = asserted[-1]
            self.tests.append(test)
            self._connect([_Pending(node, test, False)], RAISE)
            return [_Pending(node, test, True)]
        return [_Pending(node)]

    def _if(self, node: cst.If, incoming: list[_Pending]) -> list[_Pending]:
        self._add(node, incoming)
        self.tests.append(node.test)
        ends = self._suite(node.body, [_Pending(node, node.test, True)])
        otherwise = [_Pending(node, node.test, False)]
        if isinstance(node.orelse, cst.If):
            return ends + self._if(node.orelse, otherwise)
        if isinstance(node.orelse, cst.Else):
            return ends + self._suite(node.orelse.body, otherwise)
        return ends + otherwise

    def _loop(self, node: cst.For | cst.While, incoming: list[_Pending]) -> list[_Pending]:
        self._add(node, incoming)
        self.loop_headers.add(node)
        test = node.test if isinstance(node, cst.While) else None
        if test is not None:
            self.tests.append(test)
        self._loops.append(_LoopFrame(node))
        before = len(self.successors[node])
        ends = self._suite(node.body, [_Pending(node, test, True)])
        self.body_edges[node] = self.successors[node][before:before + 1]
        self._connect(ends, node, back=True)
        frame = self._loops.pop()
        exhausted = [] if _always_true(test) else [_Pending(node, test, False)]
        if node.orelse is not None:
            exhausted = self._suite(node.orelse.body, exhausted)
        return exhausted + frame.breaks

    def _try(self, node: cst.CSTNode, incoming: list[_Pending]) -> list[_Pending]:
        self._add(node, incoming)
        first = len(self.nodes)
        ends = self._suite(node.body, [_Pending(node)])
        may_raise = [_Pending(node)] + [_Pending(n) for n in self.nodes[first:]]
        handler_ends: list[_Pending] = []
        for handler in node.handlers:
            self._add(handler, may_raise)
            handler_ends += self._suite(handler.body, [_Pending(handler)])
        if node.orelse is not None:
            ends = self._suite(node.orelse.body, ends)
        ends = ends + handler_ends
        if node.finalbody is not None:
            ends = self._suite(node.finalbody.body, ends)
        return ends


def _always_true(test: cst.BaseExpression | None) -> bool:
    if isinstance(test, cst.Name):
        return test.value == "True"
    if isinstance(test, cst.Integer):
        return test.value not in ("0", "0x0", "0o0", "0b0")
    return False
