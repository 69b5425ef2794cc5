"""Questions about the paths of a :class:`~amplint.semantic.cfg.FlowGraph`.

A path is feasible unless it takes two branches of the same test different ways while
nothing on the path between them assigns what the test reads: ``if amp: ... ; if amp: ...``
has two paths, not four. Only tests written more than once in the body are followed this
way; a search that would pass too many states gives up on correlation and treats every path
as feasible, which answers "may" for more questions, never fewer.

"Within one iteration" (the default) stops at a loop's back edge and leaves the loop as if
it were exhausted: a statement late in a loop body does not reach an earlier one. With
``across_iterations`` the back edges are followed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field

import libcst as cst

from amplint.semantic.cfg import ENTRY, EXIT, RAISE, Edge, FlowGraph

# (test text, value) assumptions a path has made; a frozenset so states can be hashed.
Assumptions = frozenset[tuple[str, bool]]
MAX_STATES = 20_000

TestKey = Callable[[cst.BaseExpression], "tuple[str, bool] | None"]


class PathQueries:
    """Path questions over one graph.

    ``test_key(test)`` gives a test's comparable text and whether it is negated (``not x`` is
    ``("x", True)``); ``reads(text)`` the dotted names a test text depends on;
    ``assigns(node)`` the dotted names a statement node assigns.
    """

    def __init__(self, graph: FlowGraph, test_key: TestKey, reads: Callable[[str], frozenset[str]],
                 assigns: Callable[[object], frozenset[str]]):
        self.graph = graph
        self._test_key = test_key
        self._assigns = assigns
        self._reads = reads
        counts: dict[str, int] = {}
        self._keys: dict[int, tuple[str, bool]] = {}
        for test in graph.tests:
            key = test_key(test)
            if key is not None:
                self._keys[id(test)] = key
                counts[key[0]] = counts.get(key[0], 0) + 1
        self._correlated = {text for text, count in counts.items() if count > 1}
        self._arrivals: dict[int, set[Assumptions]] | None = None
        self._reached: dict[tuple[int, bool], set[int]] = {}
        self._overflowed: set[tuple[int, bool]] = set()  # starts whose correlated search passed MAX_STATES
        self._reached_focused: dict[tuple[int, bool, frozenset[str]], set[int] | None] = {}
        self._predecessors: dict[int, list[object]] | None = None
        self._within_iteration: dict[int, list[Edge]] = {}

    # -- the questions
    def reaches(self, a: object, b: object, across_iterations: bool = False, focus: frozenset[str] = frozenset()) -> bool:
        """A feasible path leaves ``a`` and arrives at ``b``.

        ``focus``: the texts of the tests around the two places. When following every repeated
        test would pass too many states (a long ``main()`` testing dozens of flags twice), the
        search is made again following only these, rather than none.
        """
        key = (id(a), across_iterations)
        reached = self._reached.get(key)
        if reached is None:  # one walk per start answers every target: rules ask many of one place
            reached = self._reached[key] = {id(node) for node, _ in self._search(a, across_iterations)}
        if id(b) in reached and key in self._overflowed and focus & self._correlated:
            focused = (id(a), across_iterations, focus)
            if focused not in self._reached_focused:
                self._reached_focused[focused] = self._focused_reach(a, across_iterations, self._correlated & focus)
            found = self._reached_focused[focused]
            return found is None or id(b) in found
        return id(b) in reached

    def _focused_reach(self, a: object, across_iterations: bool, correlated: set[str]) -> set[int] | None:
        arrivals = self._walk(ENTRY, [frozenset()], False, (), False, correlate=True, correlated=correlated)
        starts = {self._after(a, assumed) for node, assumed in arrivals or () if node is a} or {frozenset()}
        states = self._walk(a, list(starts), across_iterations, (), False, correlate=True, correlated=correlated)
        return None if states is None else {id(node) for node, _ in states}

    def reaches_avoiding(self, a: object, b: object, avoid: Iterable[object], across_iterations: bool = False) -> bool:
        """A feasible path leaves ``a`` and arrives at ``b`` without passing any of ``avoid``."""
        # ``b`` is a stop as well: arriving is the answer, and walking on past it made one
        # question per (event, step) pair cost the whole rest of the body.
        return any(node is b for node, _ in self._search(a, across_iterations, stop=[*avoid, b]))

    def reached_backwards(self, b: object, stop: Iterable[object]) -> set[int]:
        """Ids of the nodes some path (feasible or not) leads from to ``b`` within one iteration
        without passing any ``stop`` node; ``stop`` nodes are entered, not passed. A superset of
        what the feasible-path questions can prove, so it may rule places out, never in."""
        if self._predecessors is None:
            self._predecessors = {}
            for node in self.graph.successors:
                for edge in self._edges_from(node, False):
                    self._predecessors.setdefault(id(edge.target), []).append(node)
        stops = {id(node) for node in stop}
        seen: set[int] = set()
        pending = [b]
        while pending:
            for node in self._predecessors.get(id(pending.pop()), ()):
                if id(node) not in seen:
                    seen.add(id(node))
                    if id(node) not in stops:
                        pending.append(node)
        return seen

    def dominates(self, a: object, b: object) -> bool:
        """Every path from the body's entry to ``b`` passes ``a`` (``a`` itself included)."""
        if a is b:
            return True
        return not self.reaches_avoiding(ENTRY, b, [a])

    def on_every_path(self, a: object, b: object) -> bool:
        """Every feasible path that leaves ``a`` passes ``b`` before it ends, in one iteration.

        A path ends at the exit, at the end of the loop iteration it started in, or where
        nothing follows; a path that ends by raising is not counted against ``b``.
        """
        for node, _ in self._search(a, False, stop=[b], ends=True):
            if node is EXIT or node is _DEAD_END:
                return False
        return True

    def between(self, a: object, via: object, b: object, across_iterations: bool = False) -> bool:
        """A feasible path goes from ``a`` through ``via`` to ``b``."""
        if not (self.reaches(a, via, across_iterations) and self.reaches(via, b, across_iterations)):
            return False  # one walk each, kept for the next question
        for node, assumed in self._search(a, across_iterations):
            if node is via:
                assumed = self._after(via, assumed)
                if via is b:
                    return True
                if any(n is b for n, _ in self._search(via, across_iterations, start_assumed=assumed)):
                    return True
        return False

    def propagate(self, start: Hashable, transfer: Callable[[object, Hashable], Hashable],
                  across_iterations: bool = False, correlate_only: Callable[[str], bool] | None = None) -> "Propagation | None":
        """Carry a value along every feasible path from the body's entry: ``transfer(node, value)``
        is the value once ``node`` has run. Returns, for each node, the values that arrive there
        (before it runs), those that arrive at the exit, and, across iterations, those that a
        loop's back edges carry to its header; ``None`` when the paths are too many to follow
        (there is no fallback that drops correlation: a value on an infeasible path would be a
        false finding).

        The values are a may-analysis: each one arrives at the node on some feasible path.
        ``correlate_only(text)`` limits the tests followed to those the value depends on (the
        others cannot change what arrives, only multiply the states).
        """
        # Across passes every test is met again: one written once still takes, on the next pass,
        # the value it took unless something it reads was assigned in between.
        tests = {key[0] for key in self._keys.values()} if across_iterations else self._correlated
        correlated = {t for t in tests if correlate_only is None or correlate_only(t)}
        return self._carry(start, transfer, across_iterations, correlated)

    def _carry(self, start, transfer, across_iterations: bool, correlated: set[str]) -> "Propagation | None":
        result = Propagation()
        seen: set[tuple[int, Assumptions, Hashable]] = set()
        stack: list[tuple[object, Assumptions, Hashable]] = [(ENTRY, frozenset(), start)]
        while stack:
            node, assumed, value = stack.pop()
            for edge in self._edges_from(node, across_iterations):
                taken = self._take(edge, assumed, correlated)
                if taken is None:
                    continue
                target = edge.target
                if target is RAISE:
                    continue
                if target is EXIT or target is _DEAD_END:
                    result.at_exit.add(value)
                    continue
                if edge.back:
                    result.back[id(target)].add(value)
                state = (id(target), taken, value)
                if state in seen:
                    continue
                seen.add(state)
                if len(seen) > MAX_STATES:
                    return None
                result.arriving[id(target)].add(value)
                stack.append((target, self._after(target, taken), transfer(target, value)))
        return result

    # -- the search
    def _search(self, start: object, across_iterations: bool, stop: Iterable[object] = (), ends: bool = False,
                start_assumed: Assumptions | None = None) -> list[tuple[object, Assumptions]]:
        """(node, assumptions) states reachable by leaving ``start``; ``stop`` nodes are entered, not left.

        A path starts where a path from the body's entry to ``start`` left off, so a statement in
        ``if amp:`` knows that ``amp`` held. With ``ends``, the ends of paths are yielded too, as
        EXIT or ``_DEAD_END``.
        """
        if self._correlated:
            starts = [start_assumed] if start_assumed is not None else self._states_at(start)
            states = self._walk(start, starts, across_iterations, stop, ends, correlate=True)
            if states is not None:
                return states
            self._overflowed.add((id(start), across_iterations))
        return self._walk(start, [frozenset()], across_iterations, stop, ends, correlate=False) or []

    def _states_at(self, node: object) -> list[Assumptions]:
        """The assumptions feasible paths from the entry hold on arriving at ``node``."""
        if node is ENTRY:
            return [frozenset()]
        if self._arrivals is None:
            self._arrivals = {}
            for target, assumed in self._walk(ENTRY, [frozenset()], False, (), False, correlate=True) or ():
                self._arrivals.setdefault(id(target), set()).add(self._after(target, assumed))
        found = self._arrivals.get(id(node))
        # Unreachable from the entry (after ``while True`` with no break): nothing is known there.
        return list(found) if found else [frozenset()]

    def _walk(self, start, starts: list[Assumptions], across_iterations, stop, ends, correlate, correlated=None):
        seen: set[tuple[int, Assumptions]] = set()
        out: list[tuple[object, Assumptions]] = []
        stops = {id(node) for node in stop}
        stack = [(start, assumed) for assumed in starts]
        while stack:
            node, assumed = stack.pop()
            for edge in self._edges_from(node, across_iterations):
                taken = self._take(edge, assumed, correlated) if correlate else assumed
                if taken is None:
                    continue
                target = edge.target
                if target is RAISE:
                    continue
                if target is EXIT or target is _DEAD_END:
                    if ends:
                        out.append((target, taken))
                    continue
                state = (id(target), taken)
                if state in seen:
                    continue
                seen.add(state)
                if len(seen) > MAX_STATES:
                    return None
                out.append((target, taken))
                if id(target) not in stops:
                    stack.append((target, self._after(target, taken)))
        return out

    def _edges_from(self, node: object, across_iterations: bool) -> list[Edge]:
        edges = self.graph.successors.get(node, [])
        if not edges:
            return [_END_EDGE]
        if across_iterations:
            return edges
        key = id(node)
        found = self._within_iteration.get(key)
        if found is None:
            found = self._within_iteration[key] = self._edges_within_iteration(edges)
        return found

    def _edges_within_iteration(self, edges: list[Edge]) -> list[Edge]:
        if not any(edge.back for edge in edges):
            return edges
        out = []
        pending = list(edges)
        left: set[int] = set()  # loop headers already left: a nested loop's exit can be the outer one's back edge
        while pending:
            edge = pending.pop()
            if not edge.back:
                out.append(edge)
            elif id(edge.target) not in left:
                left.add(id(edge.target))
                pending.extend(self.graph.exits_of(edge.target) or [_END_EDGE])
        return out

    def _take(self, edge: Edge, assumed: Assumptions, correlated: set[str] | None = None) -> Assumptions | None:
        if edge.test is None:
            return assumed
        key = self._keys.get(id(edge.test))
        if key is None or key[0] not in (self._correlated if correlated is None else correlated):
            return assumed
        text, negated = key
        value = edge.holds != negated
        if (text, not value) in assumed:
            return None
        return assumed | {(text, value)}

    def _after(self, node: object, assumed: Assumptions) -> Assumptions:
        """What still holds once ``node`` has run: tests reading a name it assigns are forgotten."""
        if not assumed or node is ENTRY:
            return assumed
        assigned = self._assigns(node)
        if not assigned:
            return assumed
        return frozenset(item for item in assumed if not _depends(self._reads(item[0]), assigned))


@dataclass
class Propagation:
    """What :meth:`PathQueries.propagate` found, by node id."""

    arriving: defaultdict[int, set] = field(default_factory=lambda: defaultdict(set))
    at_exit: set = field(default_factory=set)  # at the body's end, or the end of an iteration
    back: defaultdict[int, set] = field(default_factory=lambda: defaultdict(set))  # loop header -> values its back edges carry


def _depends(reads: frozenset[str], assigned: frozenset[str]) -> bool:
    return any(r == a or r.startswith(a + ".") for r in reads for a in assigned)


_DEAD_END = "dead end"
_END_EDGE = Edge(_DEAD_END)
