"""A file's project context, read only as far as its lint asks, and what its cache entry records.

A file that holds a scaler asks about the imports it calls with training state, but most such
files never need the answer: no scaler is in scope where the helper is called, the import is
``torch`` (no project file), or the class it builds cannot build a GradScaler. A trainer's
imports can name a dozen large library modules, so summarising them all up front cost more
than the rest of the project pass.

:class:`DeferredContext` answers three questions, each cheaper than the next one's fallback:

- ``reach``: which project files an asked import may name (a few ``stat`` calls);
- ``build``: whether any of them spells ``GradScaler`` (a read, no parse);
- ``one``: what one asked import reaches (the summary of the module it names), for a call of it;
- ``all``: the whole :class:`~amplint.project.context.ProjectContext` (the summaries of every
  module an asked import names), for the checkpoints the file's imports may write;
- ``star``: what a ``from pkg.mod import *`` binds (:mod:`amplint.project.stars`), for the names a
  file uses and never binds;
- ``config``: the precision a DeepSpeed config file enables, for a path the file names as a literal
  (``config="configs/ds.json"``; :mod:`amplint.project.configs`), asked by a file that mentions
  ``deepspeed`` and a ``.json`` literal, whatever it imports.

It remembers which it was asked. A cache entry records those questions with a digest of their
answers, and is used again only while the project gives the same answers
(:func:`entry_record`, :func:`entry_matches`): an edit to ``utils.py`` misses for the
``train.py`` whose lint summarised it, not for the files whose lint never asked.
"""

from __future__ import annotations

from pathlib import Path

from amplint.project.context import ProjectContext, ProjectIndex
from amplint.project.imports import STAR_PREFIX
from amplint.project.stars import star_exports
from amplint.project.records import ModuleSummary
from amplint.project.resolve import normalized

REACH, BUILD, ONE, ALL, STAR, CONFIG = "reach", "build", "one", "all", "star", "config"
# Questions whose answer is a context: their digest is taken only when a cache entry is written.
_CONTEXTS = (ONE, ALL)


class DeferredContext:
    """What ``imports`` (the file's asked imports, as an import-only summary) reach in ``index``."""

    def __init__(self, path: str, imports: ModuleSummary, index: ProjectIndex) -> None:
        self.path = path
        self.imports = {name.local: name for name in imports.imports}
        self.index = index
        self.questions: dict[tuple[str, str], object] = {}  # asked so far, in order, with their answers
        self._context: ProjectContext | None = None
        self._loaded = False
        self._single: dict[str, ProjectContext | None] = {}

    @property
    def read(self) -> bool:
        """Whether the lint asked anything of the project: only then can its results depend on it."""
        return bool(self.questions)

    def reaches(self, local: str) -> bool:
        """The import ``local`` is asked and may name a file of the project."""
        return local in self.imports and bool(self._ask(REACH, local))

    def may_build_scaler(self, local: str) -> bool:
        """The import ``local`` may name a class that builds a GradScaler: a summary records one
        only where a call's name ends in ``GradScaler``, so a module whose text never spells it
        has none."""
        return local in self.imports and bool(self._ask(BUILD, local))

    def may_build_any_scaler(self) -> bool:
        """Some asked import may name a class that builds a GradScaler: the questions
        :meth:`amplint.project.query.ProjectView.builds_scaler` asks, for every asked import (the
        rule gates ask before the lint; the answers are recorded as the lint's own)."""
        return any(self.reaches(local) and self.may_build_scaler(local) for local in self.imports)

    def star_target(self, name: str) -> str | None:
        """What the file's ``from pkg.mod import *`` statements bind ``name`` to (``torch``),
        when they are all modules of the project that show it (the last one that binds it
        wins, as in Python); ``None`` when one of them may bind it and cannot show how."""
        found = None
        for local in self.imports:
            if not local.startswith(STAR_PREFIX):
                continue
            exports = self._ask(STAR, local)
            if exports is None:
                return None
            found = next((target for exported, target in exports if exported == name), found)
        return found

    def config_precision(self, literal: str) -> str | None:
        """``"fp16"``/``"bf16"``/``"torch_autocast-fp16"`` when the DeepSpeed config file the path
        ``literal`` names in the project enables it; ``None`` when it enables none of them or
        cannot be known."""
        return self._ask(CONFIG, literal)

    def get(self) -> ProjectContext | None:
        """Everything the asked imports reach (summarising the modules they name)."""
        self._ask(ALL, "")
        return self._whole()

    def get_for(self, local: str) -> ProjectContext | None:
        """What the asked import ``local`` reaches: only the module it names is summarised (a
        call of a trainer's ``autocast`` helper does not summarise every module the trainer
        hands its state to)."""
        self._ask(ONE, local)
        return self._one(local)

    def _ask(self, kind: str, local: str):
        """:meth:`answer`, remembered as asked by the lint (a context's digest is taken only
        when a cache entry is written)."""
        if (kind, local) not in self.questions:
            self.questions[(kind, local)] = None if kind in _CONTEXTS else self._read(kind, local)
        return self.questions[(kind, local)]

    def answer(self, kind: str, local: str):
        """The answer to one question, as JSON-ready data (the one the lint was given, if it
        asked); ``None`` for a question this file cannot be asked."""
        if kind not in _CONTEXTS and (kind, local) in self.questions:
            return self.questions[(kind, local)]
        return self._read(kind, local)

    def _read(self, kind: str, local: str):
        if kind in _CONTEXTS:
            context = self._whole() if kind == ALL else self._one(local)
            return context.digest() if context is not None else ""
        if kind == CONFIG:
            from amplint.project.configs import config_precision

            return config_precision(self.path, local, self.index.root) if isinstance(local, str) else None
        imported = self.imports.get(local)
        if imported is None or kind not in (REACH, BUILD, STAR):
            return None
        files = self._files_named(local)
        if kind == STAR:
            return star_exports(files[0]) if files else None
        if kind == REACH:
            return [ProjectIndex.display(file, Path(normalized(self.path))) for file in files]
        from amplint.sourcefile import read_bytes_or_none

        return any(_may_spell(data, "GradScaler") for data in map(read_bytes_or_none, files) if data is not None)

    def _files_named(self, local: str) -> list[Path]:
        importer = Path(normalized(self.path))
        return [file for file, _ in self.index.candidate_files(importer, self.imports[local]) if file.is_file()]

    def _one(self, local: str) -> ProjectContext | None:
        if local not in self._single:
            imported = self.imports.get(local)
            # The names the file's asked imports take from the same module are summarised
            # together: one parse of a trainer's ``utils`` for its five helpers, not five.
            names = frozenset(other.name for other in self.imports.values() if other.name is not None
                              and (other.module, other.level) == (imported.module, imported.level)) if imported else None
            self._single[local] = None if imported is None else \
                self.index.context_for(self.path, ModuleSummary(imports=(imported,)), narrow=names or None)
        return self._single[local]

    def _whole(self) -> ProjectContext | None:
        if not self._loaded:
            self._loaded = True
            self._context = self.index.context_for(self.path, ModuleSummary(imports=tuple(self.imports.values())))
        return self._context


def _digest(answers: list) -> str:
    import hashlib  # OpenSSL: only a cached run whose lint asked the project needs it
    import json

    return hashlib.sha256(json.dumps(answers, sort_keys=True).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _answers(questions: list[tuple[str, str]], project: ProjectContext | DeferredContext | None) -> list | None:
    """The project's answers; ``None`` when ``project`` cannot be asked these questions."""
    if isinstance(project, DeferredContext):
        return [project.answer(kind, local) for kind, local in questions]
    if all(kind == ALL for kind, _ in questions):  # a context given whole (or none)
        return [project.digest() if project is not None else "" for _ in questions]
    return None


def entry_record(project: ProjectContext | DeferredContext | None) -> dict | None:
    """What a cache entry records of the project: the questions the lint asked and a digest of
    their answers; ``None`` when it asked none (a context given whole counts as read)."""
    if project is None:
        return None
    if isinstance(project, DeferredContext):
        if not project.read:
            return None
        questions = list(project.questions)
    else:
        questions = [(ALL, "")]
    return {"questions": [list(q) for q in questions], "digest": _digest(_answers(questions, project))}


def entry_matches(record: dict, project: ProjectContext | DeferredContext | None) -> bool:
    """The project gives the answers ``record`` (from :func:`entry_record`) was made with."""
    answers = _answers([(kind, local) for kind, local in record["questions"]], project)
    return answers is not None and _digest(answers) == record["digest"]


def _may_spell(data: bytes, identifier: str) -> bool:
    """Whether a module's source may hold the ASCII ``identifier``: Python reads identifiers in
    NFKC form, so non-ASCII text is normalised first (an identifier ends before any character
    that could combine with its last one, so the whole text's form holds each identifier's)."""
    if identifier.encode("ascii") in data:
        return True
    if data.isascii():
        return False
    import unicodedata

    from amplint.sourcefile import SourceError, decode_source

    try:
        text = decode_source(data, "module").text
    except SourceError:
        return True
    return identifier in unicodedata.normalize("NFKC", text)
