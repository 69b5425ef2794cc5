"""A module's outline from the standard library's ``ast``: its definitions, their signatures and
its imports. Nothing here knows about AMP; what a function does is read from the facts
(:mod:`amplint.amp.summaries`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from amplint.project.imports import imports_of
from amplint.project.records import ImportedName


@dataclass(frozen=True)
class Signature:
    name: str  # ``save_checkpoint`` or ``Trainer.state_dict``
    line: int  # of the ``def``
    params: tuple[str, ...]  # positional-or-keyword parameters, in order
    keyword_only: tuple[str, ...]
    vararg: str | None
    varkw: str | None
    defaults: tuple[str, ...]  # the parameters that have a default


@dataclass(frozen=True)
class Outline:
    signatures: tuple[Signature, ...]  # top-level functions and the methods of top-level classes
    classes: tuple[tuple[str, tuple[str, ...]], ...]  # (class, its methods' qualified names)
    imports: tuple[ImportedName, ...]
    defined: tuple[str, ...]  # top-level ``def`` and ``class`` names


def outline_of(tree: ast.Module) -> Outline:
    signatures: list[Signature] = []
    classes: list[tuple[str, tuple[str, ...]]] = []
    defined: list[str] = []
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defined.append(statement.name)
            signatures.append(_signature(statement, statement.name))
        elif isinstance(statement, ast.ClassDef):
            defined.append(statement.name)
            methods = [_signature(m, f"{statement.name}.{m.name}") for m in statement.body
                       if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
            signatures.extend(methods)
            classes.append((statement.name, tuple(m.name for m in methods)))
    return Outline(tuple(signatures), tuple(classes), tuple(imports_of(tree)), tuple(defined))


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> Signature:
    args = node.args
    positional = (*args.posonlyargs, *args.args)
    with_default = positional[len(positional) - len(args.defaults):] if args.defaults else ()
    defaults = tuple(a.arg for a in with_default) + tuple(a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)
    return Signature(
        name=name, line=node.lineno, params=tuple(a.arg for a in positional), keyword_only=tuple(a.arg for a in args.kwonlyargs),
        vararg=args.vararg.arg if args.vararg is not None else None, varkw=args.kwarg.arg if args.kwarg is not None else None,
        defaults=defaults,
    )
