"""Which references go through which import statement: what an import rewrite must also change."""

from __future__ import annotations

from functools import cached_property

from amplint.semantic.records import ImportRecord, Reference


class ImportUses:
    """The ``model.import_uses`` service of :class:`~amplint.semantic.model.SemanticModel`; reads ``references`` and asks
    ``import_bound_names`` and ``import_binding``."""

    def __init__(self, model: "SemanticModel") -> None:
        self.model = model

    @cached_property
    def _references_by_import(self) -> dict[int, list[Reference]]:
        out: dict[int, list[Reference]] = {}
        bound = self.model.bindings.import_bound_names
        for ref in self.model.references:
            if ref.parts[0] not in bound:
                continue
            binding = self.model.bindings.import_binding(ref.parts[0], ref.ctx.scope)
            if binding is not None:
                out.setdefault(id(binding[0]), []).append(ref)
        return out

    def references_through(self, record: ImportRecord) -> list[Reference]:
        """References whose first name is bound by the import ``record`` where they are read
        (a local rebinding of the same name hides it), in source order."""
        return list(self._references_by_import.get(id(record), ()))
