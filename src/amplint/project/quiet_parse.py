"""``ast.parse`` for the project pass: a text Python cannot parse gives ``None``, not an exception."""

from __future__ import annotations

import ast
import warnings


def parse(text: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning for odd escapes: not the pass's business
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
