"""``amplint check``'s run: files found and linted (or stdin), and the summary line after it."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import replace
from pathlib import Path

from amplint.cli.common import Failure, _display, _error, _one_line, _plural, _warning, echo


def _project_root(config, start: Path) -> Path:
    if config.path is not None:
        return config.path.parent
    from amplint.discovery import find_git_root

    git_root = find_git_root(start.resolve() if start.exists() else Path.cwd())
    return git_root if git_root is not None else Path.cwd()


def _summary(mode: str, findings, fixed: int, changed, unchecked: int, missing: int, context) -> str:
    remaining = len(findings)
    if mode == "diff":
        line = f"Would fix {_plural(fixed, 'error')}." if changed else "No errors would be fixed."
        if remaining:
            line += f" {remaining} would remain."
    elif mode == "fix" and fixed:
        line = f"Found {_plural(fixed + remaining, 'error')} ({fixed} fixed, {remaining} remaining)."  # ruff's words
    elif remaining:
        applicable = sum(context.applicable(f) for f in findings)
        hidden = sum(1 for f in findings if f.fix is not None and not context.applicable(f))
        notes = []
        if applicable:
            notes.append(f"{applicable} fixable with --fix")
        if hidden:
            notes.append(f"{hidden} fixable with --fix --unsafe-fixes")
        line = f"Found {_plural(remaining, 'error')}" + (f" ({', '.join(notes)})" if notes else "") + "."
    elif unchecked or missing:
        line = "No findings in the files checked."  # never "All checks passed!" when something was not checked
    else:
        line = "All checks passed!"
    if unchecked:
        line += f" {_plural(unchecked, 'file')} could not be checked."
    if missing:
        line += f" {_plural(missing, 'path')} not found."
    return line


def _show_fixes(changed, settings, mode: str) -> None:
    """Per file, how many findings of each code ``--fix`` removed (or would remove)."""
    from collections import Counter

    from amplint.engine import lint_text
    from amplint.report import rule_name

    if not changed:
        echo("No errors fixed." if mode == "fix" else "No errors would be fixed.", err=True)
        return
    echo("Fixed:" if mode == "fix" else "Would fix:", err=True)
    for result in changed:
        before = Counter(f.code for f in lint_text(result.original_source or "", result.filename, settings).findings)
        after = Counter(f.code for f in result.findings)
        echo(f"- {_one_line(result.filename)}:", err=True)
        for code in sorted(before):
            count = before[code] - after.get(code, 0)
            if count > 0:
                echo(f"    {count} × {code} ({rule_name(code)})", err=True)


def find_files(paths, config, options, report: bool = False, quiet: bool = True):
    """The files a run checks (``--show-files`` lists them, ``--watch`` polls them)."""
    from amplint.cli.settings import extension_map
    from amplint.discovery import DEFAULT_EXCLUDE, PatternError, check_pattern, discover

    for option in ("exclude", "extend_exclude"):
        for pattern in options[option]:
            try:
                check_pattern(pattern)
            except PatternError as exc:
                raise Failure(f"--{option.replace('_', '-')}: {exc}") from None
    exclude = options["exclude"] or (config.exclude if config.exclude is not None else DEFAULT_EXCLUDE)
    extend_exclude = (*config.extend_exclude, *options["extend_exclude"])
    include = (*config.extend_include, *options["extend_include"], *(f"*.{ext}" for ext in extension_map(config, options)))
    found = discover(
        paths, exclude, extend_exclude, root=config.root, respect_gitignore=options["respect_gitignore"],
        force_exclude=options["force_exclude"], extend_include=include,
    )
    report_found(found, report, quiet)
    return found


def report_found(found, report: bool = True, quiet: bool = True) -> None:
    """The paths not found (when ``report``) and, unless ``quiet``, the folders with nothing to check."""
    if report:
        for missing in found.missing:
            _error(f"no such file or directory: {missing}")
    if not quiet:
        for empty in found.empty:
            _warning(f"no Python files found in {empty}")


def language_of(filename: str, extensions: dict[str, str]) -> str:
    """python, pyi or ipynb: by ``--extension``/``extension`` first, else by the file's suffix."""
    suffix = os.path.splitext(filename)[1].lstrip(".")
    if suffix in extensions:
        return extensions[suffix]
    return "ipynb" if suffix == "ipynb" else "pyi" if suffix == "pyi" else "python"


def _verbose(message: str) -> None:
    echo(f"amplint: verbose: {_one_line(message)}", err=True)


class AbsolutePaths(dict):
    """Displayed name -> absolute path, resolved when first looked up: only the files with a
    finding are ever looked up, and resolving every file of a large run costs a stat per
    folder level of each."""

    def __getitem__(self, name: str) -> str:
        value = super().__getitem__(name)
        if isinstance(value, Path):
            value = str(value.resolve())
            self[name] = value
        return value

    def get(self, name: str, default=None):
        return self[name] if name in self else default


def _run_files(paths, settings, config, start, mode, options, quiet, edits, found=None):
    """Lint (or fix) the files found in ``paths``; ``found``: discovery already run, not yet reported."""
    from amplint.cli.settings import extension_map
    from amplint.jobs import Job, default_jobs, run_jobs
    from amplint.model import FileError, FileResult

    if found is None:
        found = find_files(paths, config, options, report=True, quiet=quiet)
    else:
        report_found(found, quiet=quiet)
    verbose = options.get("verbose")
    extensions = extension_map(config, options)

    cache_dir = None
    cache = None
    if mode == "check" and not options["no_cache"]:
        from amplint.cache import Cache, CacheDirError, check_cache_root, default_cache_dir

        project_root = _project_root(config, start)
        directory = Path(options["cache_dir"]) if options["cache_dir"] else default_cache_dir(project_root)
        try:
            check_cache_root(directory, project_root=project_root, linted=[Path(p) for p in paths or ["."]])
        except CacheDirError as exc:
            raise Failure(str(exc)) from None
        cache = Cache(directory.resolve())
        try:
            cache.ensure()
            cache_dir = str(cache.root)
        except (OSError, CacheDirError):
            cache = None  # an unwritable cache folder only costs speed

    jobs = []
    paths_map = AbsolutePaths()
    # realpath, not resolve(): a symlink loop among the names must not raise.
    named = {os.path.realpath(given) for given in paths if not Path(given).is_dir()}
    for path in found.files:
        display = _display(path)
        paths_map[display] = path
        jobs.append(
            Job(str(path), settings, mode=mode, unsafe=options["unsafe_fixes"], display=display, cache_dir=cache_dir,
                edits=edits, explicit=bool(named) and os.path.realpath(path) in named,
                notebook=language_of(path.name, extensions) == "ipynb", write=False)
        )
    workers = options["jobs"] or default_jobs()
    from amplint.worker_memory import MemorySettingError, ceiling_for

    try:
        ceiling_for(workers)
    except MemorySettingError as exc:
        raise Failure(str(exc)) from None
    if verbose:
        _verbose(f"{_plural(len(jobs), 'file')} to check with {_plural(workers, 'worker')}; cache: {cache_dir or 'off'}")
    began = time.perf_counter()
    results = run_jobs(jobs, workers)
    if verbose:
        _verbose(f"checked in {time.perf_counter() - began:.2f}s")
    for message in found.errors:  # reported like an unreadable file: the run goes on
        name = message.split(": ", 1)[0]
        results.append(FileResult(filename=name, errors=[FileError(name, message)]))
    if mode == "fix":
        results = _write_fixes(results, jobs, workers, options["partial_fixes"])
    if cache is not None:
        try:
            cache.prune()
        except OSError:
            pass
    return results, paths_map, len(found.missing)


def _write_fixes(results, jobs, workers: int, partial: bool):
    """Write what the workers fixed, once every file was checked.

    When a file could not be checked (a worker died on it, it could not be read), nothing is
    written unless ``partial`` (``--partial-fixes``): a run that did not see every file is not
    one whose fixes the user asked for, and its files are reported as they are on disk.
    """
    from amplint.jobs import run_jobs, write_pending

    pending = [index for index, result in enumerate(results) if result.pending_write is not None]
    if not pending:
        return results
    unchecked = sum(1 for result in results if any(not error.warning for error in result.errors))
    job_of = {job.display or job.path: job for job in jobs}
    if unchecked and not partial:
        _warning(
            f"no fixes written: {_plural(unchecked, 'file')} could not be checked "
            "(pass --partial-fixes to write the fixes of the files that were)"
        )
        rechecked = run_jobs([replace(job_of[results[i].filename], mode="check", cache_dir=None) for i in pending], workers)
        for index, result in zip(pending, rechecked):
            results[index] = result
        return results
    from amplint.pool import run_apart

    written = run_apart(write_pending, [(results[index], job_of[results[index].filename]) for index in pending])
    for index, result in zip(pending, written):
        results[index] = result
    return results


def _run_stdin(settings, mode, options, edits: bool, extensions: dict[str, str]):
    from amplint.engine import lint_text
    from amplint.jobs import skipped_result
    from amplint.model import FileError, FileResult
    from amplint.sourcefile import SourceError, decode_source, encode_source

    filename = options["stdin_filename"] or "-"
    data = sys.stdin.buffer.read()
    if language_of(filename, extensions) == "ipynb":
        return [_stdin_notebook(data, filename, settings, mode, options, edits)]
    try:
        source = decode_source(data, filename)
    except SourceError as exc:
        if mode == "fix":
            sys.stdout.buffer.write(data)  # a pipe must not lose the file
            sys.stdout.flush()
        return [FileResult(filename=filename, errors=[FileError(filename, str(exc))])]
    try:
        result = lint_text(source.text, filename, settings, fix=mode in ("fix", "diff"), unsafe=options["unsafe_fixes"],
                            edits=edits)
        if result.skipped:
            # What comes on stdin is named as explicitly as a file on the command line: a syntax
            # error in it is reported even when the prefilter finds no AMP text.
            result = skipped_result(data, filename, explicit=True, text=source.text)
    except Exception as exc:  # noqa: BLE001 - report, never a traceback
        result = FileResult(filename=filename, errors=[FileError(filename, f"{filename}: internal error: {type(exc).__name__}: {exc}", internal=True)])
        result.source = source.text
    if mode == "fix":
        sys.stdout.buffer.write(encode_source(source, result.source if result.source is not None else source.text))
        sys.stdout.flush()
    return [result]


def _stdin_notebook(data: bytes, filename: str, settings, mode: str, options, edits: bool):
    """A notebook's JSON on stdin; with ``--fix`` the fixed JSON goes to stdout."""
    from amplint.model import FileError, FileResult
    from amplint.notebook import NotebookError, lint_notebook
    from amplint.notebook_file import decode_notebook, encode_notebook

    try:
        raw = decode_notebook(data)
    except NotebookError as exc:
        result = FileResult(filename=filename, errors=[FileError(filename, f"{filename}: {exc}")])
    else:
        result = lint_notebook(raw, filename, settings, mode in ("fix", "diff"), options["unsafe_fixes"], edits)
    if mode == "fix":
        sys.stdout.buffer.write(encode_notebook(data, result.source) if result.source is not None else data)
        sys.stdout.flush()
    return result
