"""Calls looked up by what they call, so that a question about one API does not scan every call."""

from __future__ import annotations

from functools import cached_property
from typing import Iterable

from amplint.semantic.records import CallSite


class CallIndex:
    """The ``model.call_index`` service of :class:`~amplint.semantic.model.SemanticModel`; reads ``calls`` (with resolved qualnames)."""

    def __init__(self, model: "SemanticModel") -> None:
        self.model = model

    @cached_property
    def _calls_by_qualname(self) -> dict[str, list[tuple[int, CallSite]]]:
        out: dict[str, list[tuple[int, CallSite]]] = {}
        for index, site in enumerate(self.model.calls):
            if site.qualname is not None:
                out.setdefault(site.qualname, []).append((index, site))
        return out

    def calls_to(self, qualnames: Iterable[str]) -> list[CallSite]:
        """Calls whose callee resolves to one of ``qualnames`` (canonical), in source order."""
        found = [entry for qualname in set(qualnames) for entry in self._calls_by_qualname.get(qualname, ())]
        return [site for _, site in sorted(found, key=lambda entry: entry[0])]
