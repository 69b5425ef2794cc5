"""The project pass of a run over files: summarise every module (in the worker pool, cached by
content), then join each linted file's imports to those summaries before it is linted.

A file is summarised when the prefilter lets it through or when it holds any text a summary can
record (``torch.save``, ``load_state_dict``, ``.step(``...): a ``utils.py`` that saves the model
and optimizer but mentions no scaler is skipped by the prefilter, yet ``train.py``, which imports
it, needs its summary. A helper that is not among the linted files (``amplint check train.py``)
is read from disk when an import names it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from amplint.project.records import ModuleSummary

# Text without which a module's summary records nothing (an import-only summary is kept apart).
SUMMARY_TOKENS = (
    b"torch.save", b"load_state_dict", b".step(", b"backward", b"unscale_", b"clip_grad",
    b"Scaler", b"scaler", b".half(", b"float16", b"bfloat16",
)


# Only a file that holds a GradScaler asks about other modules (AMP006's checkpoint helpers):
# another file's imports are not followed, so linting one model file does not read its library.
ASKING_TOKENS = (b"scaler", b"Scaler")
_CALL = re.compile(r"\b([A-Za-z_]\w*)(?:\.\w+)*\s*\(")
_TRAINING_STATE = re.compile(r"optim|\bopt\b|ckpt|checkpoint|state_dict|scaler", re.IGNORECASE)


@dataclass(frozen=True)
class SummaryJob:
    path: str
    cache_dir: str | None = None


def summarize_path(job: SummaryJob) -> ModuleSummary | None:
    """The summary of one module file (``None``: unreadable or not Python); runs in a worker."""
    from amplint.project.records import ModuleSummary
    from amplint.sourcefile import SourceError, decode_source, read_bytes

    path = Path(job.path)
    if path.suffix != ".py":
        return None
    try:
        data = read_bytes(path)
    except SourceError:
        return None
    if not any(token in data for token in SUMMARY_TOKENS):
        return ModuleSummary(defined=_defined_names(data))
    try:
        text = decode_source(data, job.path).text
    except SourceError:
        return None
    return summarize_cached(text, job.cache_dir)


def summarize_cached(text: str, cache_dir: str | None) -> ModuleSummary:
    from amplint.project.summarize import summarize_text

    cache = None
    if cache_dir is not None:
        from amplint.cache import Cache

        cache = Cache(Path(cache_dir))
        cached = cache.get_summary(text)
        if cached is not None:
            return cached
    summary = summarize_text(text)
    if cache is not None:
        cache.put_summary(text, summary)
    return summary


def with_project_contexts(jobs: Sequence, workers: int | None) -> list:
    """``jobs`` (engine ``Job``s), each given the :class:`ProjectContext` its imports reach.

    Only the files the prefilter lets through can report anything, so only their imports are
    followed: their import statements are read from the text (the lint parses them whole
    later), then the modules they name are summarised in the worker pool.
    """
    from amplint.pool import run_in_pool

    imports = {}
    for job in jobs:
        if job.settings.project_analysis and job.path.endswith(".py"):
            found = _imports_if_linted(job)
            if found is not None:
                imports[job.path] = found
    if not imports:
        return list(jobs)
    from amplint.project.context import ProjectIndex

    cache_dir = next(job.cache_dir for job in jobs if job.path in imports)
    indexes: dict[str, ProjectIndex] = {}
    for job in jobs:
        if job.path in imports and job.settings.root not in indexes:
            indexes[job.settings.root] = ProjectIndex(job.settings.root, load=lambda path: summarize_path(SummaryJob(path, cache_dir)))
    wanted: list[tuple[str, str]] = []
    for job in jobs:
        if job.path in imports:
            index = indexes[job.settings.root]
            wanted.extend((job.settings.root, module) for module in index.imported_files(job.path, imports[job.path]))
    wanted = sorted(set(wanted))
    helpers = run_in_pool(summarize_path, [SummaryJob(module, cache_dir) for _, module in wanted], workers, parses=False)
    for (root, module), summary in zip(wanted, helpers):
        indexes[root].add(module, summary)
    out = []
    for job in jobs:
        context = indexes[job.settings.root].context_for(job.path, imports[job.path]) if job.path in imports else None
        out.append(replace(job, project=context) if context is not None else job)
    return out


def _imports_if_linted(job) -> ModuleSummary | None:
    """The imports of a file the prefilter lets through (as an import-only summary), else ``None``."""
    from amplint.selection import may_have_findings
    from amplint.sourcefile import SourceError, decode_source, read_bytes

    try:
        data = read_bytes(Path(job.path))
        if not any(t in data for t in ASKING_TOKENS) or not may_have_findings(data, job.settings, job.display or job.path):
            return None
        text = decode_source(data, job.path).text
    except SourceError:
        return None
    from amplint.project.records import ModuleSummary
    from amplint.project.summarize import scan_imports

    handed = _names_handed_training_state(text)
    found = tuple(name for name in scan_imports(text) if name.local in handed)
    return ModuleSummary(imports=found) if found else None


def _names_handed_training_state(text: str) -> set[str]:
    """Names called (``name(...)``, ``name.attr(...)``) with what looks like training state near
    the opening parenthesis (``save_checkpoint(model, optimizer, ...)``, ``utils.resume(ckpt, ...)``):
    only such imports are followed; a model file's dozens of library imports are not."""
    return {
        match.group(1) for match in _CALL.finditer(text)
        if _TRAINING_STATE.search(text, match.end(), match.end() + 400)
    }


def _defined_names(data: bytes) -> tuple[str, ...]:
    """Top-level ``def``/``class`` names, read from the text: a module with nothing to summarise
    still tells ``from pkg import name`` that ``name`` is its function, not a submodule."""
    import re

    return tuple(m.decode("ascii", "replace") for m in re.findall(rb"^(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", data, re.MULTILINE))
