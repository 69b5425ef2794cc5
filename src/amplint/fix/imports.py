"""Rewriting an import so that a name it binds points at the module the name moved to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import libcst as cst

import amplint.fix.edits as E
import amplint.semantic.syntax as S
from amplint.semantic.records import ImportRecord, Reference

# dotted name -> where it lives now (``None``: it did not move)
Relocation = Callable[[str], "str | None"]


@dataclass
class ImportRewrite:
    """The node changes that repoint one import, or why it must be rewritten by hand."""

    changes: dict = field(default_factory=dict)
    blocked: str | None = None


def rewrite_group(model, ref: Reference) -> tuple[str, ImportRecord | None]:
    """The key of the uses that must be rewritten together with ``ref``, and the import they share.

    A ``from ... import`` statement is rewritten as a whole, so all its names share one key; a
    plain ``import`` shares one per alias. A reference spelled out through ``torch`` (or bound
    by no import) changes alone and has no import to rewrite.
    """
    binding = model.bindings.import_binding(ref.parts[0], ref.ctx.scope)
    if binding is None:
        return f"use:{id(ref.node)}", None
    record, alias, target = binding
    if target == "torch":
        return f"use:{id(ref.node)}", None
    if isinstance(record.node, cst.ImportFrom):
        return f"importstmt:{id(record.node)}", record
    return f"import:{id(alias)}", record


def rewrite_import(record: ImportRecord, bound: str, relocate: Relocation) -> ImportRewrite:
    """Repoint the import binding ``bound`` of ``record`` at ``relocate``'s answer.

    ``import a.b as x`` becomes ``import new as x``; ``from a import b`` becomes ``from
    new_parent import new_member``, and only when every name the statement imports moves to the
    same parent (otherwise the statement would have to be split).
    """
    node = record.node
    alias = next(a for a, name, _ in record.aliases if name == bound)
    if isinstance(node, cst.Import):
        full = S.module_name(alias.name)
        new_module = relocate(full)
        if new_module is None or alias.asname is None:
            return ImportRewrite(blocked=f"rewrite `import {full}` by hand")
        return ImportRewrite({alias: alias.with_changes(name=E.dotted_expression(new_module))})
    if node.relative:
        return ImportRewrite(blocked="relative import")
    module = S.module_name(node.module)
    member = S.module_name(alias.name)
    new_module = relocate(f"{module}.{member}")
    if new_module is None:
        return ImportRewrite(blocked=f"rewrite `from {module} import {member}` by hand")
    new_parent, _, new_member = new_module.rpartition(".")
    if isinstance(node.names, cst.ImportStar):
        return ImportRewrite(blocked="star import")
    moved = [relocate(f"{module}.{S.module_name(a.name)}") for a in node.names]
    if len(node.names) == 1 or all(m is not None for m in moved):
        if {m.rpartition(".")[0] for m in moved} == {new_parent}:  # type: ignore[union-attr]
            names = node.names
            if new_member != member:
                names = [a.with_changes(name=cst.Name(new_member)) if a is alias else a for a in node.names]
            return ImportRewrite({node: node.with_changes(module=E.dotted_expression(new_parent), names=names)})
    return ImportRewrite(blocked=f"`from {module} import ...` also imports other names: split the import by hand")
