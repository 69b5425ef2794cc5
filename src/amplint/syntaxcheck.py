"""What the running Python thinks of a text before libcst parses it.

Two questions, answered from one ``ast`` parse: is the text valid Python for this interpreter
(code that libcst accepts but Python rejects, such as a NUL byte in a comment or 101 indent
levels, is a syntax error, not something to lint or fix), and is any expression nested so deep
that libcst's parser would take minutes (its cost grows faster than the nesting).
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass

# Real code nests expressions a few dozen levels deep; libcst needs over a second from about
# 1,000 levels of a chained call or sum, and minutes from a few thousand.
MAX_EXPRESSION_DEPTH = 500


@dataclass(frozen=True)
class PythonView:
    tree: ast.Module | None
    error: SyntaxError | None = None  # set when the running Python rejects the text


def python_view(text: str, filename: str) -> PythonView:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like are not ours to report
            return PythonView(ast.parse(text, filename))
    except SyntaxError as exc:
        return PythonView(None, exc)
    except ValueError as exc:  # NUL bytes, before Python 3.12
        error = SyntaxError(str(exc))
        error.lineno, error.offset = 1, 1
        return PythonView(None, error)
    except (RecursionError, MemoryError):
        return PythonView(None)


def expression_depth(tree: ast.AST) -> int:
    """The deepest nesting of expressions inside one statement (walked without recursion)."""
    deepest = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
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
