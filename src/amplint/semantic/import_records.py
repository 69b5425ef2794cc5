"""What an ``import`` statement binds: (alias, bound name, qualified target, binding target)."""

from __future__ import annotations

import libcst as cst

import amplint.semantic.syntax as S

# (alias node, name bound, qualified target, target kept on the binding: None for relative imports)
ImportedName = tuple[cst.ImportAlias, str, str, "str | None"]


def imported_names(node: cst.Import | cst.ImportFrom) -> list[ImportedName]:
    if isinstance(node, cst.Import):
        out: list[ImportedName] = []
        for alias in node.names:
            full = S.module_name(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                out.append((alias, alias.asname.name.value, full, full))
            else:
                head = full.split(".")[0]
                out.append((alias, head, head, head))
        return out
    if isinstance(node.names, cst.ImportStar):
        return []
    relative = "." * len(node.relative)
    module = relative + S.module_name(node.module) if node.relative else S.module_name(node.module)
    out = []
    for alias in node.names:
        name = S.module_name(alias.name)
        bound = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
        if node.relative:
            out.append((alias, bound, f"{module}{name}", None))
        else:
            out.append((alias, bound, f"{module}.{name}", f"{module}.{name}"))
    return out
