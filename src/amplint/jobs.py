"""Linting files: one :class:`Job` per file, read, skipped, linted (as Python or as a notebook),
fixed and written; many in parallel (:func:`run_jobs`).

Above :mod:`amplint.engine` (one text) and :mod:`amplint.notebook` (one notebook's cells);
the project pass (:mod:`amplint.project.phase`) only adds a job's context.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from amplint.engine import _lint_once, gated_unparsed, lint_text, syntax_error_finding
from amplint.model import FileError, FileResult, Finding
from amplint.selection import may_have_findings, same_answer, same_tokens
from amplint.settings import Settings
from amplint.sourcefile import (
    MAX_FILE_BYTES,
    MAX_NOTEBOOK_BYTES,
    EncodingSyntaxError,
    SourceError,
    SourceText,
    decode_source,
    encode_source,
    may_declare_encoding,
    read_bytes,
)

TYPE_CHECKING = False  # typing itself is not imported: a clean run does not need it
if TYPE_CHECKING:
    from amplint.project.context import ProjectContext
    from amplint.project.deferred import DeferredContext



@dataclass(frozen=True)
class Job:
    """One file to lint or fix, with all a worker process needs to do it."""

    path: str
    settings: Settings
    mode: str = "check"  # "check" | "fix" | "diff"
    unsafe: bool = False
    display: str | None = None  # the name to show (relative path)
    cache_dir: str | None = None
    edits: bool = False  # compute fix edits (json/sarif output)
    # Named on the command line (pre-commit names every file): a syntax error is
    # reported even when the prefilter skips the file, at the cost of a quick parse.
    explicit: bool = False
    notebook: bool | None = None  # read as a notebook (None: when the name ends in .ipynb)
    # What this file's same-project imports reach (the project pass), read when a rule first
    # asks; None: the file asks about no import.
    project: ProjectContext | DeferredContext | None = None
    # --fix: write the fixed file here (False: leave it in ``FileResult.pending_write`` for the
    # caller, who writes only once every file was checked).
    write: bool = True


def skipped_result(data: bytes, filename: str, explicit: bool, text: str | None = None) -> FileResult:
    """The result of a file the prefilter skips; one named explicitly is still syntax-checked.
    ``text``: the decoded text, when the file is not ASCII."""
    result = FileResult(filename=filename, skipped=True)
    if explicit:
        import warnings

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                from amplint.parser_verdict import check_syntax

                check_syntax(data, filename)
        except SyntaxError:
            # Parse for real: the finding then comes with libcst's and Python's view of it.
            text = text if text is not None else data.decode("utf-8", errors="replace")
            result.findings = _lint_once(text, filename, Settings(), frozenset()).findings
        except (ValueError, RecursionError, MemoryError):
            pass
    return result


def process_file(job: Job, data: bytes | None = None) -> FileResult:
    """Lint (or fix) one file; ``data``: its bytes, when the caller has read them already."""
    filename = job.display or job.path
    path = Path(job.path)
    notebook = job.notebook if job.notebook is not None else path.suffix == ".ipynb"
    if data is None:
        try:
            data = read_bytes(path, MAX_NOTEBOOK_BYTES if notebook else MAX_FILE_BYTES)
        except SourceError as exc:
            return FileResult(filename=filename, errors=[FileError(filename, str(exc).replace(str(path), filename, 1))])
    if notebook:
        return _process_notebook(job, path, data, filename)
    ascii_only = data.isascii()
    if ascii_only and not may_have_findings(data, job.settings, filename):
        return skipped_result(data, filename, job.explicit)
    # Other text is decoded even when the prefilter skips it: a file that is not valid in its
    # encoding is reported, never passed as clean.
    try:
        source = decode_source(data, filename)
    except EncodingSyntaxError as exc:
        # Python refuses to run it (a BOM with a latin-1 cookie): a syntax error of the file.
        return FileResult(filename=filename, findings=[syntax_error_finding(exc.lineno, 1, f"SyntaxError: {exc.msg}", filename)])
    except SourceError as exc:
        return FileResult(filename=filename, errors=[FileError(filename, str(exc))])
    if ascii_only:
        if source.encoding == "utf-8":
            same_answer(data, source.text)  # the same characters: the prefilter's answer stands
    # In UTF-8 an ASCII token is the same bytes: the bytes answer for the text, and faster.
    elif not may_have_findings(data if source.encoding == "utf-8" else source.text, job.settings, filename):
        return skipped_result(data, filename, job.explicit, source.text)
    elif source.encoding == "utf-8":
        same_tokens(data, source.text)  # the tokens found in the bytes are those of the text
    cache = None
    if job.cache_dir is not None and job.mode == "check" and not job.edits:
        from amplint.cache import Cache

        cache = Cache(Path(job.cache_dir))
        cached = cache.get(source.text, filename, job.settings, job.project)
        if cached is not None:
            return cached
    gated = None if job.explicit else gated_unparsed(source.text, filename, job.settings, job.project)
    if gated is not None and not gated:
        result = skipped_result(data, filename, job.explicit)
        if cache is not None:
            cache.put(source.text, filename, job.settings, result, job.project)
        return result
    try:
        result = lint_text(source.text, filename, job.settings, fix=job.mode in ("fix", "diff"), unsafe=job.unsafe, edits=job.edits,
                           project=job.project, gated=gated)
    except RecursionError:
        return FileResult(filename=filename, errors=[FileError(filename, f"{filename}: too deeply nested to lint")])
    except MemoryError:
        # Past the worker's ceiling (worker_memory.py): this file alone is lost.
        message = f"{filename}: not linted: it needs more memory than a worker may use (AMPLINT_WORKER_MEMORY)"
        return FileResult(filename=filename, errors=[FileError(filename, message, internal=True)])
    except Exception as exc:  # noqa: BLE001 - an amplint bug on one file must not stop the others
        return FileResult(filename=filename, errors=[FileError(filename, f"{filename}: internal error: {type(exc).__name__}: {exc}", internal=True)])
    if job.mode == "fix" and result.changed:
        result = _write_fixes(path, data, source, result, job)
    if cache is not None and not result.errors:
        cache.put(source.text, filename, job.settings, result, job.project)
    if job.mode == "check" and not result.findings:
        result.source = None  # reporters only need the text when there is something to show
    return result


def _process_notebook(job: Job, path: Path, data: bytes, filename: str) -> FileResult:
    """A ``.ipynb`` file: its code cells are linted (the cache is not used for notebooks)."""
    from amplint.notebook import NotebookError, lint_notebook
    from amplint.notebook_file import decode_notebook

    try:
        raw = decode_notebook(data)
    except NotebookError as exc:
        return FileResult(filename=filename, errors=[FileError(filename, f"{filename}: {exc}")])
    try:
        result = lint_notebook(raw, filename, job.settings, job.mode in ("fix", "diff"), job.unsafe, job.edits)
    except Exception as exc:  # noqa: BLE001 - an amplint bug on one file must not stop the others
        return FileResult(filename=filename, errors=[FileError(filename, f"{filename}: internal error: {type(exc).__name__}: {exc}", internal=True)])
    if job.mode == "fix" and result.changed:
        from amplint.fixwrite import WriteError
        from amplint.notebook_file import write_notebook

        if not job.write:
            result.pending_write = (str(path), data, result.source or "")
            return result
        try:
            write_notebook(path, data, result.source or "", filename)
        except WriteError as exc:
            result.errors.append(FileError(filename, str(exc), warning=True))
    return result


def _write_fixes(path: Path, data: bytes, source: SourceText, result: FileResult, job: Job) -> FileResult:
    """Write the fixed text over ``path`` (read as ``data``); if it is not written, report the file as it is."""
    from amplint.fixwrite import WriteError, write_fix
    from amplint.worker_lifetime import finishing_writes

    filename = result.filename
    try:
        fixed = encode_source(source, result.source or "")
    except UnicodeEncodeError as exc:
        reason = f"{filename}: the fixed text cannot be encoded as {source.encoding} ({exc.reason}); fixes not written"
    else:
        if not job.write:
            result.pending_write = (str(path), data, fixed)
            return result
        try:
            with finishing_writes():
                write_fix(path, data, fixed, filename)
            return result
        except WriteError as exc:
            reason = str(exc)
    unfixed = lint_text(source.text, filename, job.settings, edits=job.edits, project=job.project)
    unfixed.errors.append(FileError(filename, reason, warning=True))
    return unfixed


def write_pending(pending: tuple[FileResult, Job]) -> FileResult:
    """Write the fix a worker left in ``result.pending_write``; if it is not written, the file as it is on disk."""
    from amplint.fixwrite import WriteError, write_fix
    from amplint.notebook_file import write_notebook
    from amplint.worker_lifetime import finishing_writes

    result, job = pending
    path, original, new = result.pending_write  # type: ignore[misc]
    result.pending_write = None
    try:
        with finishing_writes():
            if isinstance(new, str):
                write_notebook(Path(path), original, new, result.filename)
            else:
                write_fix(Path(path), original, new, result.filename)
        return result
    except WriteError as exc:
        unfixed = lint_with_project(replace(job, mode="check", write=True, cache_dir=None))
        unfixed.errors.append(FileError(result.filename, str(exc), warning=True))
        return unfixed


def run_jobs(jobs: Sequence[Job], workers: int | None = None) -> list[FileResult]:
    """Process files, in parallel when it pays off; results come back in input order."""
    from amplint.pool import run_in_pool

    # A file that asks about the modules it imports is given their summaries where it is linted.
    return run_in_pool(lint_with_project, jobs, workers, lost=_worker_died, cost=_file_size)


def _file_size(job: Job) -> int:
    """What a job is expected to cost: reading and searching a file take time in proportion to its
    size, and the large files are those a parse takes longest on."""
    try:
        return os.stat(job.path).st_size
    except (OSError, ValueError):
        return 0


def _worker_died(job: Job, reason: str) -> FileResult:
    """The result of a file whose worker process died on it, twice (the second time alone)."""
    name = job.display or job.path
    return FileResult(filename=name, errors=[FileError(name, f"{name}: not linted: {reason}", internal=True)])


def lint_with_project(job: Job) -> FileResult:
    """Lint one file with what its imports reach (the project pass); runs in a worker."""
    from amplint.project.phase import with_project_context

    if job.notebook or job.path.endswith(".ipynb"):
        return process_file(job)  # a notebook asks nothing of the project
    try:
        data = read_bytes(job.path)
    except SourceError:
        return process_file(job)  # which reports why the file cannot be read
    # Skipped, as most files are: it asks the project nothing. (A file that is not ASCII is still
    # decoded by process_file, which reports one not valid in its encoding; in UTF-8, the bytes
    # answer the prefilter for the text.)
    if not may_have_findings(data, job.settings, job.display or job.path) and (data.isascii() or not may_declare_encoding(data)):
        return process_file(job, data)
    # Read once: the question whether the file asks and its lint share the bytes.
    return process_file(with_project_context(job, data), data)


def default_jobs() -> int:
    from amplint.pool import default_jobs as jobs

    return jobs()


def iter_findings(results: Iterable[FileResult]) -> Iterable[Finding]:
    for result in results:
        yield from result.findings
