"""What the running Python thinks of a text before libcst parses it.

Two questions, answered from one ``ast`` parse: is the text valid Python for this interpreter
(code that libcst accepts but Python rejects, such as a NUL byte in a comment or 101 indent
levels, is a syntax error, not something to lint or fix), and is any expression nested so deep
that libcst's parser would take minutes (its cost grows faster than the nesting).
"""

from __future__ import annotations

import ast
import re
from itertools import accumulate
import warnings
from dataclasses import dataclass

# Real code nests expressions a few dozen levels deep; libcst needs over a second from about
# 1,000 levels of a chained call or sum, and minutes from a few thousand.
MAX_EXPRESSION_DEPTH = 500


@dataclass(frozen=True)
class PythonView:
    tree: ast.Module | None
    error: SyntaxError | None = None  # set when the running Python rejects the text
    # set when Python's own parser gave up (stack or recursion exhausted): libcst's, which
    # recurses further, would then take minutes and gigabytes on the same text
    gave_up: str | None = None


def python_view(text: str, filename: str) -> PythonView:
    from amplint.gc_policy import building_tree

    try:
        with warnings.catch_warnings(), building_tree():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like are not ours to report
            return PythonView(ast.parse(text, filename))
    except SyntaxError as exc:
        return PythonView(None, exc)
    except ValueError as exc:  # NUL bytes, before Python 3.12
        error = SyntaxError(str(exc))
        error.lineno, error.offset = 1, 1
        return PythonView(None, error)
    except RecursionError:
        return PythonView(None, gave_up="Python's parser ran out of recursion depth")
    except MemoryError:
        return PythonView(None, gave_up="Python's parser ran out of stack")


def expression_depth(tree: ast.AST, text: str | None = None) -> int:
    """The deepest nesting of expressions inside one statement, or a bound on it that is
    below :data:`MAX_EXPRESSION_DEPTH` (walked without recursion).

    With ``text`` (the source of ``tree``), an expression is walked only when its source could
    nest that deep: every level of nesting takes an operator, a bracket, a dot or a keyword
    (``not``, ``lambda``, ``if``, ``for``, ``await``, ``yield``), so an expression with fewer
    of those than the limit cannot exceed it. Walking every expression of a large file would
    cost half a libcst parse; counting characters in the few long ones costs nearly nothing.
    """
    if text is None:
        return _depth_below(tree)
    source = text.encode("utf-8", "surrogatepass")
    starts = _line_starts(source)

    def may_nest_too_deep(node: ast.AST) -> bool:
        try:
            begin = starts[node.lineno - 1] + node.col_offset
            end = starts[node.end_lineno - 1] + node.end_col_offset
        except (AttributeError, IndexError, TypeError):
            return True  # no position: walk it
        if end - begin <= MAX_EXPRESSION_DEPTH:
            return False
        return len(_NESTING_TOKEN.findall(source, begin, end)) > MAX_EXPRESSION_DEPTH

    def may_nest_too_deep_between(begin: int, end: int) -> bool:
        return end - begin > MAX_EXPRESSION_DEPTH and len(_NESTING_TOKEN.findall(source, begin, end)) > MAX_EXPRESSION_DEPTH

    def offset(line: int, column: int) -> int:
        return starts[line - 1] + column

    deepest = 0
    statements: list[ast.AST] = list(getattr(tree, "body", ()))
    while statements:
        node = statements.pop()
        inner = [child for name in _BODY_FIELDS for child in (getattr(node, name, None) or ())]
        if not inner:  # a simple statement: its own span decides
            if may_nest_too_deep(node):
                deepest = max(deepest, _depth_below(node))
            continue
        statements.extend(inner)
        # a compound statement: only its header (up to the first statement inside) is its own
        try:
            decorators = getattr(node, "decorator_list", None) or ()
            begin = min([offset(node.lineno, node.col_offset)] + [offset(d.lineno, d.col_offset) for d in decorators])
            first = min(_position(child) for child in inner)
            long_header = may_nest_too_deep_between(begin, offset(*first))
        except (AttributeError, IndexError, TypeError, ValueError):
            long_header = True  # ``match`` cases carry no position: walk their (short) headers
        if long_header:
            for name, value in ast.iter_fields(node):
                if name not in _BODY_FIELDS:
                    for child in value if isinstance(value, list) else (value,):
                        if isinstance(child, ast.AST):
                            deepest = max(deepest, _depth_below(child))
    return deepest


_BODY_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _position(node: ast.AST) -> tuple[int, int]:
    while not hasattr(node, "lineno"):  # a match case: where its first statement starts
        node = node.body[0]
    return node.lineno, node.col_offset
_NESTING_TOKEN = re.compile(rb"[-+*/%@&|^~<>!.(\[{]|\b(?:not|lambda|if|for|await|yield)\b")


def _depth_below(root: ast.AST) -> int:
    deepest = 0
    stack: list[tuple[ast.AST, int]] = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, ast.expr):
            depth += 1
            if depth > deepest:
                deepest = depth
        else:
            depth = 0
        stack.extend((child, depth) for child in ast.iter_child_nodes(node))
    return deepest


def _line_starts(source: bytes) -> list[int]:
    """Byte offset of each line's start in the UTF-8 ``source``, lines counted as ``ast`` counts
    them (``ast``'s columns are UTF-8 byte offsets too)."""
    if b"\r" not in source:  # the usual case: one split and running sums, no match objects
        starts = [0]
        starts.extend(accumulate(len(line) + 1 for line in source.split(b"\n")))
        starts.pop()  # past the end: no line starts there
        return starts
    starts = [0]
    for match in re.finditer(rb"\r\n|\r|\n", source):
        starts.append(match.end())
    return starts
