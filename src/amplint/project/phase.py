"""The project pass of a run over files: summarise every module (in the worker pool, cached by
content), then join each linted file's imports to those summaries before it is linted.

A file is summarised when the prefilter lets it through or when it holds any text a summary can
record (``torch.save``, ``load_state_dict``, ``.step(``...): a ``utils.py`` that saves the model
and optimizer but mentions no scaler is skipped by the prefilter, yet ``train.py``, which imports
it, needs its summary. A helper that is not among the linted files (``amplint check train.py``)
is read from disk when an import names it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from amplint.project.context import ProjectIndex
from amplint.project.records import ModuleSummary

# Text without which a module's summary records nothing.
SUMMARY_TOKENS = (
    b"save", b"load_state_dict", b"step(", b"update(", b"backward", b"unscale_", b"clip_grad",
    b"Scaler", b"half(", b"bfloat16(", b"float16", b"bfloat16",
)


@dataclass(frozen=True)
class SummaryJob:
    path: str
    cache_dir: str | None = None


def summarize_path(job: SummaryJob) -> ModuleSummary | None:
    """The summary of one module file (``None``: unreadable or not Python); runs in a worker."""
    from amplint.sourcefile import SourceError, decode_source, read_bytes

    path = Path(job.path)
    if path.suffix != ".py":
        return None
    try:
        data = read_bytes(path)
    except SourceError:
        return None
    if not any(token in data for token in SUMMARY_TOKENS) and b"import" not in data:
        return ModuleSummary()
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
    """``jobs`` (engine ``Job``s), each given the :class:`ProjectContext` its imports reach."""
    from amplint.pool import run_in_pool

    wanted = [job for job in jobs if job.settings.project_analysis and job.path.endswith(".py")]
    if not wanted:
        return list(jobs)
    summaries = run_in_pool(summarize_path, [SummaryJob(job.path, job.cache_dir) for job in wanted], workers, parses=False)
    cache_dir = next((job.cache_dir for job in wanted), None)
    roots: dict[str, ProjectIndex] = {}
    out = []
    by_path = dict(zip((job.path for job in wanted), summaries))
    for job in jobs:
        if job.path not in by_path:
            out.append(job)
            continue
        index = roots.get(job.settings.root)
        if index is None:
            index = roots[job.settings.root] = ProjectIndex(
                job.settings.root, load=lambda path: summarize_path(SummaryJob(path, cache_dir))
            )
            for path, summary in by_path.items():
                index.add(path, summary)
        context = index.context_for(job.path, by_path[job.path])
        out.append(replace(job, project=context) if context is not None else job)
    return out
