"""What ``from pkg.mod import *`` binds, read from ``pkg/mod.py`` itself: the names the module binds
by an import and by nothing else, with what each import names (``torch`` for ``import torch``,
``torch.nn`` for ``import torch.nn as nn``). Python's star import binds every public name of the
module (or those of a literal ``__all__``), so in a file that never binds ``torch`` itself, a
``torch.cuda.amp.autocast(...)`` reads the module's ``torch``.

Only what the module shows for certain is given: nothing when its ``__all__`` is not a literal
list of strings or when it star-imports in turn (a name may come from there), and no name that
is bound otherwise too (``try: import torch / except ImportError: torch = None``) or by a relative
import.
"""

from __future__ import annotations

import ast
from pathlib import Path

from amplint.project.quiet_parse import parse

_EXPORTS: dict[str, tuple[bytes, list[list[str]] | None]] = {}
_EXPORTS_MAX = 256


def star_exports(path: Path) -> list[list[str]] | None:
    """``[[name, qualified target], ...]`` that ``from <module at path> import *`` binds to imports
    (sorted, JSON-ready); ``None`` when the module cannot show it for certain."""
    from amplint.sourcefile import SourceError, decode_source, read_bytes_or_none

    data = read_bytes_or_none(path)
    if data is None:
        return None
    key = str(path)
    seen = _EXPORTS.get(key)
    if seen is not None and seen[0] == data:
        return seen[1]
    try:
        tree = parse(decode_source(data, key).text)
    except SourceError:
        tree = None
    found = _exports(tree) if tree is not None else None
    if len(_EXPORTS) >= _EXPORTS_MAX:
        _EXPORTS.clear()
    _EXPORTS[key] = (data, found)
    return found


def _top_level(tree: ast.Module) -> list[ast.stmt]:
    """The module's statements, and those of its top-level ``if``/``try`` blocks."""
    out: list[ast.stmt] = []
    pending = list(tree.body)
    while pending:
        statement = pending.pop(0)
        out.append(statement)
        if isinstance(statement, (ast.If, ast.Try)):
            pending.extend(statement.body)
            pending.extend(statement.orelse)
            for handler in getattr(statement, "handlers", []):
                pending.extend(handler.body)
            pending.extend(getattr(statement, "finalbody", []))
    return out


def _exports(tree: ast.Module) -> list[list[str]] | None:
    imported: dict[str, set[str | None]] = {}
    other: set[str] = set()
    public: set[str] | None = None
    for statement in _top_level(tree):
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                local = alias.asname or alias.name.split(".")[0]
                imported.setdefault(local, set()).add(alias.name if alias.asname else local)
        elif isinstance(statement, ast.ImportFrom):
            for alias in statement.names:
                if alias.name == "*":
                    return None  # a name may come from the module it star-imports in turn
                target = f"{statement.module}.{alias.name}" if statement.module and not statement.level else None
                imported.setdefault(alias.asname or alias.name, set()).add(target)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            if "__all__" in names:
                value = statement.value
                if not isinstance(statement, ast.Assign) or not isinstance(value, (ast.List, ast.Tuple)) or not all(
                    isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
                ):
                    return None
                public = {e.value for e in value.elts}
            other |= names
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            other.add(statement.name)
        elif isinstance(statement, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
            other |= {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    out = []
    for name, targets in imported.items():
        exported = name in public if public is not None else not name.startswith("_")
        if exported and name not in other and len(targets) == 1 and None not in targets:
            out.append([name, next(iter(targets))])
    return sorted(out)
