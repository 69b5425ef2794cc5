"""The project pass of a run over files: a file that asks about other modules is given what its
imports reach, summarised from those modules, when a rule first asks.

Only a file that holds a GradScaler asks (AMP006's checkpoint helpers), and only about the
imports it calls with training state, or a file that mentions autocast, about the imports named
like an autocast helper, or a file that mentions ``deepspeed`` and a ``.json`` literal, about the
DeepSpeed config files it names (AMP024, AMP027: the precision they enable); the modules those imports name are summarised (cached by
content) when a rule linting that file first asks about one of them, in the worker that lints
it. Every other file is linted with no project context and costs the pass one byte test. A
module is summarised when it holds any text a summary can record (``torch.save``,
``load_state_dict``, ``.step(``...), else only its ``def``/``class`` names are read: a
``utils.py`` that saves the model and optimizer but mentions no scaler is skipped by the
prefilter, yet ``train.py``, which imports it, needs its summary. A helper that is not among the
linted files (``amplint check train.py``) is read from disk too.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

TYPE_CHECKING = False  # typing itself is not imported: a clean run does not need it
if TYPE_CHECKING:
    from amplint.project.records import ModuleSummary

# Text without which no call of a definition can change its summary. A module holding none of it
# is summarised from its definitions' names alone (:func:`summarize_path`), and the focused
# parse keeps every definition holding one (they are among :data:`amplint.focus.EVENT_TOKENS`), so
# a blanked definition's summary is its signature.
SUMMARY_TOKENS = ("unscale_", ".scale(", "get_scale", "torch.half", "save(", "clip_grad", "Scaler", "scaler",
                  "backward", ".step(", ".half(", "half()", "float16", "load_state_dict", "optim", "autocast")

SUMMARY_BYTES = tuple(token.encode("ascii") for token in SUMMARY_TOKENS)


def with_project_context(job, data: bytes | None = None):
    """``job`` given a :class:`~amplint.project.deferred.DeferredContext` of what its asked
    imports reach, read when a rule first asks about one of them; ``job`` itself when it asks
    nothing. ``data``: the file's bytes, when already read."""
    if not job.settings.project_analysis or not job.path.endswith(".py"):
        return job
    from amplint.project.asking import asked_imports

    if data is None:
        from amplint.sourcefile import read_bytes_or_none

        data = read_bytes_or_none(job.path)
        if data is None:
            return job
    imports = asked_imports(job, data)
    if imports is None and not _asks_about_configs(job, data):
        return job
    from amplint.project.context import ProjectIndex
    from amplint.project.deferred import DeferredContext
    from amplint.project.records import ModuleSummary

    # Summarised as the imports are resolved: a module no asked import names is never read.
    index = ProjectIndex(job.settings.root, load=lambda path: summarize_path(path, job.cache_dir),
                         load_part=lambda path, only: summarize_path(path, job.cache_dir, only))
    return replace(job, project=DeferredContext(job.path, imports or ModuleSummary(), index))


def _asks_about_configs(job, data: bytes) -> bool:
    """The file names a DeepSpeed config file by a literal path and the prefilter keeps it."""
    from amplint.project.asking import asks_about_configs
    from amplint.selection import may_have_findings

    return may_have_findings(data, job.settings, job.display or job.path) and asks_about_configs(data)


# The modules this process summarised (by path, cache and the definitions asked for, ``None`` for
# all), with a hash of the text each summary was read from: the files of one package ask about the
# same few helpers (``utils/auto_docstring.py``), and a summary answers for any of its definitions.
_SUMMARIZED: dict[tuple[str, str | None, frozenset[str] | None], tuple[bytes, ModuleSummary | None]] = {}
_SUMMARIZED_MAX = 256


def summarize_path(path: str, cache_dir: str | None = None, only: frozenset[str] | None = None) -> ModuleSummary | None:
    """The summary of one module file (``None``: unreadable or not Python); ``only``: of these
    top-level definitions alone (:func:`~amplint.project.summarize.summarize_text`)."""
    import hashlib

    from amplint.project.records import ModuleSummary
    from amplint.sourcefile import SourceError, decode_source, read_bytes

    if Path(path).suffix != ".py":
        return None
    try:
        data = read_bytes(Path(path))
    except SourceError:
        return None
    content = hashlib.blake2b(data, digest_size=16).digest()
    seen = _SUMMARIZED.get((path, cache_dir, only))
    if seen is not None and seen[0] == content:
        return seen[1]
    # A summary of more definitions holds theirs as they are read alone: what a function does
    # depends on its own definition, the module's statements and what it reaches, all kept.
    for (seen_path, seen_cache, seen_only), (seen_content, wider) in _SUMMARIZED.items():
        if (seen_path == path and seen_cache == cache_dir and seen_content == content
                and (seen_only is None or only is not None and only <= seen_only)):
            return wider.narrowed(only) if wider is not None and only is not None else wider
    summary: ModuleSummary | None
    if not any(token in data for token in SUMMARY_BYTES):
        summary = ModuleSummary(defined=_defined_names(data))
    else:
        try:
            summary = summarize_cached(decode_source(data, path).text, cache_dir, only)
        except SourceError:
            summary = None
    if len(_SUMMARIZED) >= _SUMMARIZED_MAX:
        _SUMMARIZED.clear()
    _SUMMARIZED[(path, cache_dir, only)] = (content, summary)
    return summary


def summarize_cached(text: str, cache_dir: str | None, only: frozenset[str] | None = None) -> ModuleSummary:
    from amplint.project.summarize import summarize_text

    cache = None
    if cache_dir is not None:
        from amplint.cache import Cache

        cache = Cache(Path(cache_dir))
        cached = cache.get_summary(text, only)
        if cached is not None:
            return cached
    summary = summarize_text(text, only=only)
    if cache is not None:
        cache.put_summary(text, summary, only)
    return summary


def _defined_names(data: bytes) -> tuple[str, ...]:
    """Top-level ``def``/``class`` names, read from the text: a module with nothing to summarise
    still tells ``from pkg import name`` that ``name`` is its function, not a submodule."""
    import re

    return tuple(m.decode("ascii", "replace") for m in re.findall(rb"^(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", data, re.MULTILINE))
