"""Python's parser's verdict on a file amplint does not otherwise read: a file named on the
command line that the prefilter skips is still checked for syntax, and must cost little.

``syntaxcheck`` answers the same question from an ``ast`` it keeps for the lint; this module
builds none, so a clean run never imports ``ast``.
"""

from __future__ import annotations


def check_syntax(data: bytes, filename: str) -> None:
    """Raise ``SyntaxError`` where Python rejects ``data``, without building its ast.

    The symbol table is built from the parser's C-level tree: cheaper than compiling to bytecode
    (no code generation), and far cheaper than ``ast.parse``'s Python objects. It rejects a
    little more than the parser (``nonlocal`` at module level, a duplicate argument); the lint
    then decides with the parser's own verdict.
    """
    try:
        from _symtable import symtable
    except ImportError:  # pragma: no cover - an interpreter other than CPython
        compile(data, filename, "exec", dont_inherit=True)
        return
    symtable(data, filename, "exec")
