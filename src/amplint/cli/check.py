"""``amplint check``: lint (or fix) the files, report, and choose the exit status.

Free of click: the usual command line reaches ``check_entry`` through ``cli.fastparse``; click's
``check`` command (``cli.group``) calls the same function.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from amplint.cli.common import EXIT_ERROR, EXIT_FINDINGS, EXIT_INTERRUPTED, EXIT_OK, Failure, _error, _plural, _warning, echo
from amplint.cli.run import _run_files, _run_stdin, _show_fixes, _summary, _verbose, find_files
from amplint.cli.settings import extension_map, settings_and_config, show_settings

# Formats that print fix edits, which cost a render per fix to compute.
EDIT_FORMATS = frozenset({"json", "json-lines", "rdjson", "sarif"})


def check_entry(paths: list[str], options: dict) -> None:
    """Run ``amplint check`` with parsed ``options`` and exit with its status."""
    try:
        if options["watch"]:
            from amplint.cli.watch import watch

            _check_combinations(options, _uses_stdin(paths, options))
            _refuse_report_onto_watched_input(paths, options)
            code = watch(paths, options, run_check)
        else:
            code = run_check(paths, **options)
    except Failure as exc:
        _error(str(exc))
        code = EXIT_ERROR
    except BrokenPipeError:  # pragma: no cover - `amplint check | head`
        code = EXIT_ERROR
    except KeyboardInterrupt:
        # Here, not in main(): click would turn it into "Aborted!" and exit 1.
        _error("interrupted")
        # The interrupted process pool's exit hook would write to its closed wake-up pipe and
        # print a traceback after this line; the workers die with this process (worker_lifetime).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_INTERRUPTED)
    sys.exit(code)


def _uses_stdin(paths: list[str], options: dict) -> bool:
    return paths == ["-"] or (not paths and options["stdin_filename"] is not None)


def _check_combinations(options: dict, use_stdin: bool) -> None:
    if options["quiet"] and options["verbose"]:
        raise Failure("--quiet and --verbose cannot be combined")
    if options["watch"] and (use_stdin or options["add_noqa"] or options["show_files"] or options["show_settings"]):
        raise Failure("--watch cannot be combined with stdin, --add-noqa, --show-files or --show-settings")
    if use_stdin and (options["show_files"] or options["show_settings"]):
        raise Failure("--show-files and --show-settings list files found on disk and cannot read stdin")


def run_check(paths: list[str], **options) -> int:
    from amplint.report import HUMAN_FORMATS, canonical_format

    fix_only = options["fix_only"]
    mode = "diff" if options["diff"] else "fix" if options["fix"] or fix_only else "check"
    settings, config, start = settings_and_config(paths, options)
    output_format = canonical_format(options["output_format"] or config.output_format or "full")
    use_stdin = _uses_stdin(paths, options)
    if "-" in paths and not use_stdin:
        raise Failure("`-` (stdin) cannot be combined with other paths")
    _check_combinations(options, use_stdin)
    human = output_format in HUMAN_FORMATS
    quiet = options["quiet"]
    if options["verbose"]:
        where = "--isolated: no configuration file read" if options["isolated"] else (
            f"configuration: {config.path}" if config.path is not None else "no configuration file found: defaults")
        _verbose(f"{where}; {_plural(len(settings.enabled_codes()), 'rule')} enabled")

    if options["show_files"] or options["show_settings"]:
        from amplint.cli.common import _display

        found = find_files(paths or ["."], config, options, report=True, quiet=True)
        if options["show_settings"]:
            from amplint.cli.settings import target_torch_and_origin

            _, origin = target_torch_and_origin(config, start, options)
            show_settings(settings, config, options, found.files, output_format, origin)
        else:
            for path in sorted(found.files, key=lambda p: _display(p)):
                echo(_display(path))
        return EXIT_ERROR if found.missing else EXIT_OK
    if options["add_noqa"]:
        return _add_noqa(paths, settings, config, start, options, use_stdin, mode)

    edits = output_format in EDIT_FORMATS and not options["statistics"] and not fix_only
    if use_stdin:
        refuse_report_onto_input(paths, options, config, ())
        results, paths_map, missing = _run_stdin(settings, mode, options, edits, extension_map(config, options)), {}, 0
    else:
        found = find_files(paths or ["."], config, options, report=False)
        refuse_report_onto_input(paths, options, config, found.files)
        results, paths_map, missing = _run_files(paths or ["."], settings, config, start, mode, options, quiet, edits,
                                                 found=found)

    from amplint.model import Finding
    from amplint.report import ReportContext, get_reporter, statistics

    results.sort(key=lambda r: r.filename)
    findings = sorted((f for r in results for f in r.findings), key=Finding.sort_key)
    context = ReportContext(results, mode, options["unsafe_fixes"], options["show_fixes"], paths_map, output_format)

    internal = False
    unreadable = 0
    for result in results:
        for error in result.errors:
            if error.warning:
                _warning(error.message)
                continue
            _error(error.message)
            internal = internal or error.internal
            unreadable += not error.internal
    unchecked = sum(1 for result in results if any(not error.warning for error in result.errors))

    fixed = sum(r.fixed_count for r in results)
    changed = [r for r in results if r.changed]
    out = sys.stderr if use_stdin and mode == "fix" else sys.stdout
    if mode == "diff":
        from amplint.report.diff import render_diffs

        text = render_diffs(changed)
    else:
        reporter = get_reporter(output_format)
        shown = [] if fix_only else findings  # --fix-only reports what it fixed, not what is left
        if options["statistics"]:
            text = reporter.render_statistics(statistics(shown, context), context)
        else:
            text = reporter.render(shown, context)
    write_report(text, options["output_file"], out)

    if options["show_fixes"] and mode in ("fix", "diff"):
        _show_fixes(changed, settings, mode)
    if human and not quiet:
        # On stdout after the report, as ruff prints it, so that `> report.txt` and `| tee` keep it;
        # on stderr where stdout carries something else (a patch, a fixed text) or the report went
        # to --output-file.
        summary_to_stderr = mode == "diff" or out is not sys.stdout or bool(options["output_file"])
        if not summary_to_stderr and text and output_format in ("full", "text", "grouped") and not options["statistics"]:
            echo("")  # ruff's blank line between the last multi-line finding and the summary
        if fix_only and mode == "fix":
            line = f"Fixed {_plural(fixed, 'error')}." if fixed else "No errors fixed."
            echo(line + (f" {_plural(unchecked, 'file')} could not be checked." if unchecked else ""), err=summary_to_stderr)
        else:
            echo(_summary(mode, findings, fixed, changed, unchecked, missing, context), err=summary_to_stderr)

    if internal or missing:
        return EXIT_ERROR
    if options["exit_zero"]:
        return EXIT_OK
    if mode == "diff":
        return EXIT_FINDINGS if changed or unreadable else EXIT_OK  # a file not checked is not "nothing to change"
    if options["exit_non_zero_on_fix"] and changed:
        return EXIT_FINDINGS
    if fix_only:
        return EXIT_FINDINGS if unreadable else EXIT_OK
    return EXIT_FINDINGS if findings or unreadable else EXIT_OK


def refuse_report_onto_input(paths: list[str], options: dict, config, files) -> None:
    """Raise Failure when ``--output-file`` names an input: a path given, a file found in a
    folder given (``files``), ``--stdin-filename`` or the configuration file. Called before
    anything is linted or fixed, so a refused run changes no file."""
    output = options["output_file"]
    if output is None:
        return
    from amplint.overwrite_guard import overwrite_refusal

    named = [path for path in paths if path != "-"]
    named += [path for path in (options["stdin_filename"], options["config_path"], config.path) if path]
    from_environment = os.environ.get("AMPLINT_OUTPUT_FILE") == output
    option = f"AMPLINT_OUTPUT_FILE={output}" if from_environment else f"--output-file {output}"
    problem = overwrite_refusal(option, output, [*named, *files])
    if problem:
        raise Failure(problem)


def _refuse_report_onto_watched_input(paths: list[str], options: dict) -> None:
    # Before the first run, so that --watch with a refused report ends at once rather than polling.
    if options["output_file"] is None:
        return
    from amplint.cli.settings import resolve_run_config

    try:
        config, _ = resolve_run_config(paths, options)
    except Failure:
        return  # each run reports the configuration's error, and --watch waits for it to be fixed
    refuse_report_onto_input(paths, options, config, find_files(paths or ["."], config, options).files)


def write_report(text: str, output_file: str | None, stream) -> None:
    """The report goes to ``--output-file`` when given (its folder created, like ruff), else to ``stream``."""
    if output_file is None:
        if text:
            stream.write(text)
        stream.flush()
        return
    path = Path(output_file)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
    except OSError as exc:
        raise Failure(f"--output-file {output_file}: cannot write ({exc.strerror or exc})") from None


def _add_noqa(paths, settings, config, start, options, use_stdin: bool, mode: str) -> int:
    from amplint.add_noqa import add_noqa_to_files
    from amplint.model import SYNTAX_ERROR_CODE
    from amplint.noqa import UNUSED_NOQA_CODE

    if use_stdin:
        raise Failure("--add-noqa writes files and cannot read stdin")
    if mode != "check":
        raise Failure("--add-noqa cannot be combined with --fix, --fix-only or --diff")
    results, paths_map, missing = _run_files(
        paths or ["."], settings, config, start, "check", {**options, "no_cache": True}, options["quiet"], False
    )
    for result in results:
        # As ruff leaves RUF100 out: suppressing "this directive is unused" would only grow it.
        result.findings = [finding for finding in result.findings if finding.code != UNUSED_NOQA_CODE]
    outcome = add_noqa_to_files(sorted(results, key=lambda r: r.filename), paths_map)
    failed = False
    for result in results:
        for error in result.errors:
            _error(error.message)
            failed = True
        for finding in result.findings:
            if finding.code == SYNTAX_ERROR_CODE:
                _error(f"{finding.filename}:{finding.location.row}:{finding.location.column}: {finding.message} (not suppressible)")
                failed = True
    for error in outcome.errors:
        _error(error.message)
        failed = True
    for place in outcome.not_placeable:
        where = "a string, a continuation or IPython syntax" if ":cell " in place else "a string or a continuation"
        _warning(f"{place}: no comment can go at the end of this line (inside {where}); not suppressed")
    if not options["quiet"]:
        echo(f"Added {_plural(outcome.added, 'noqa directive')}.", err=True)
    return EXIT_ERROR if missing or failed else EXIT_OK
