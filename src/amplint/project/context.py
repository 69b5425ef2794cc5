"""One file's imports joined to the summaries of the modules they name.

A :class:`ProjectIndex` holds the summarised modules by normalised path. For one file,
:meth:`ProjectIndex.context_for` resolves its same-project imports (:mod:`amplint.project.resolve`)
and keeps only what they reach, as a :class:`ProjectContext`, with a digest that the file's
cache entry records, so that an edit to ``utils.py`` invalidates the cached results of
``train.py``, which imports it. A linted file gets it through a
:class:`~amplint.project.deferred.DeferredContext`, read as far as its lint asks.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from amplint.project.records import ImportedName, ModuleSummary
from amplint.project.resolve import candidates, normalized


@dataclass(frozen=True)
class ImportTarget:
    local: str  # the name bound in the importing file
    module: str  # the module's file, relative to the importing file's folder
    attribute: str | None  # the function or class imported; ``None``: the name is the module


@dataclass(frozen=True)
class ProjectContext:
    targets: tuple[ImportTarget, ...] = ()
    modules: tuple[tuple[str, ModuleSummary], ...] = ()

    def module(self, name: str) -> ModuleSummary | None:
        return next((summary for key, summary in self.modules if key == name), None)

    def target(self, local: str) -> ImportTarget | None:
        return next((t for t in self.targets if t.local == local), None)

    def digest(self) -> str:
        """Changes whenever anything a rule may learn from the other modules changes."""
        import hashlib  # OpenSSL: only a cached run with a project context needs it
        import json

        payload = json.dumps(
            [[(t.local, t.module, t.attribute) for t in self.targets], [(k, s.to_dict()) for k, s in self.modules]],
            sort_keys=True, default=list,
        )
        return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class ProjectIndex:
    """The summaries of the modules one file's imports name, read as they are resolved: ``load``
    summarises a module file, or returns ``None``; ``load_part`` summarises only some of its
    top-level definitions (:meth:`~amplint.project.records.ModuleSummary.narrowed`), where the
    whole summary would cost more (without it, the whole summary is narrowed)."""

    def __init__(self, root: str | Path, load: Callable[[str], ModuleSummary | None] | None = None,
                 load_part: Callable[[str, frozenset[str]], ModuleSummary | None] | None = None) -> None:
        self.root = Path(normalized(root))
        self.summaries: dict[tuple[str, frozenset[str] | None], ModuleSummary | None] = {}
        self._load = load
        self._load_part = load_part

    def summary(self, path: Path, only: frozenset[str] | None = None) -> ModuleSummary | None:
        key = normalized(path)
        if (key, only) not in self.summaries:
            if only is not None and (self._load_part is None or (key, None) in self.summaries):
                whole = self.summary(path)
                summary = whole.narrowed(only) if whole is not None else None
            elif not Path(key).is_file():
                summary = None
            elif only is not None:
                summary = self._load_part(key, only)
            else:
                summary = self._load(key) if self._load is not None else None
            self.summaries[(key, only)] = summary
        return self.summaries[(key, only)]

    @staticmethod
    def display(path: Path, importer: Path) -> str:
        """The module's path relative to the importing file's folder (``utils.py``,
        ``../common/io.py``): what messages show, the same from any working directory."""
        return Path(os.path.relpath(path, importer.parent)).as_posix()

    def candidate_files(self, importer: Path, imported: ImportedName) -> Iterator[tuple[Path, str | None]]:
        """The module files ``imported`` may name, in the order Python would try them (not the
        importing file itself), each with the attribute it would be imported from (or ``None``);
        ``importer``: normalized. The files need not exist."""
        for module_file, attribute in candidates(importer, imported, self.root):
            key = normalized(module_file)
            if key != str(importer):
                yield Path(key), attribute

    def context_for(self, path: str, own: ModuleSummary | None, narrow: frozenset[str] | None = None) -> ProjectContext | None:
        """What ``path``'s imports reach in this index; ``None`` when they reach nothing.

        ``narrow``: a name imported from a module (``from utils import save``) reaches only the
        definitions of that module named in ``narrow`` (its summary narrowed to them; ``narrow``
        holds the name); a module imported whole reaches its whole summary."""
        if own is None or not own.imports:
            return None
        importer = Path(normalized(path))
        targets: list[ImportTarget] = []
        modules: dict[str, ModuleSummary] = {}
        for imported in own.imports:
            for module_file, attribute in self.candidate_files(importer, imported):
                summary = self.summary(module_file, narrow if narrow is not None and attribute is not None else None)
                if summary is None:
                    continue
                if attribute is not None and attribute not in summary.defined:
                    continue  # ``from pkg import name``: not defined there, perhaps the submodule
                name = self.display(module_file, importer)
                targets.append(ImportTarget(imported.local, name, attribute))
                modules[name] = summary
                break
        if not targets:
            return None
        return ProjectContext(tuple(targets), tuple(sorted(modules.items())))
