"""The ``amplint`` command line: ``check`` (the default), ``rules``, ``rule`` and ``verify``.

Kept cheap to import: only click at module level. The engine, the reporters and the runtime
companion are imported when a command needs them (``amplint --version`` imports no rule,
and nothing here ever imports torch).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

import amplint
from amplint.cli_common import Failure, _error, _plural, _warning
from amplint.cli_run import _run_files, _run_stdin, _show_fixes, _summary

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it
# The same names as amplint.report.FORMATS (a test keeps them equal), written out so that
# building the command line imports no reporter.
OUTPUT_FORMATS = (
    "full", "concise", "grouped", "json", "json-lines", "junit", "github", "gitlab", "pylint", "azure", "sarif",
    "rdjson", "text",
)
# Formats that print fix edits, which cost a render per fix to compute.
EDIT_FORMATS = frozenset({"json", "json-lines", "rdjson"})

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
_VERIFY_HELP = "Run a training script with AMP and check that it still trains (needs amplint[runtime])."


# --------------------------------------------------------------------------- the group


class AmplintGroup(click.Group):
    """``amplint [PATHS] [OPTIONS]`` without a subcommand behaves exactly as ``amplint check``."""

    _GROUP_ARGS = frozenset({"-h", "--help", "--version"})

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.list_commands(ctx) and args[0] not in self._GROUP_ARGS):
            _refuse_mistyped_command(args[0] if args else "", self.list_commands(ctx))
            args = ["check", *args]
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), "verify"]

    def get_command(self, ctx: click.Context, name: str):
        if name == "verify":
            return _load_verify()
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Listing commands must not import the runtime companion.
        rows = []
        for name in self.list_commands(ctx):
            if name == "verify":
                rows.append((name, _VERIFY_HELP))
            else:
                command = super().get_command(ctx, name)
                if command is not None and not command.hidden:
                    rows.append((name, command.get_short_help_str(limit=200)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _refuse_mistyped_command(word: str, commands: list[str]) -> None:
    """Exit 2 when ``word`` is a near miss of a command (``chek``) rather than a path to lint."""
    import difflib
    import re

    if not re.fullmatch(r"[a-z][a-z-]*", word) or os.path.exists(word):
        return
    close = difflib.get_close_matches(word, commands, n=1, cutoff=0.6)
    if close:
        _error(f"unknown command '{word}' (did you mean '{close[0]}'?)")
        sys.exit(EXIT_ERROR)


def _load_verify() -> click.Command:
    import importlib.util

    def unavailable(message: str) -> click.Command:
        @click.command("verify", context_settings={"ignore_unknown_options": True, "allow_extra_args": True}, add_help_option=False)
        def stub() -> None:
            _error(message)
            sys.exit(EXIT_ERROR)

        return stub

    hint = "amplint verify needs PyTorch: pip install 'amplint[runtime]'"
    try:
        if importlib.util.find_spec("torch") is None:
            return unavailable(hint)
    except (ImportError, ValueError):
        return unavailable(hint)
    try:
        from amplint.runtime.command import verify_command
    except ImportError as exc:
        if (getattr(exc, "name", None) or "").split(".")[0] == "torch":
            return unavailable(hint)
        return unavailable(f"amplint verify is unavailable: {exc}")
    return verify_command


@click.group(cls=AmplintGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(amplint.__version__, "--version", prog_name="amplint", message="%(prog)s %(version)s")
def main_group() -> None:
    """Find and fix misuse of PyTorch automatic mixed precision (AMP).

    Without a command, `amplint [PATHS] [OPTIONS]` runs `amplint check`.
    """


# --------------------------------------------------------------------------- check


def _split(values: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    for value in values:
        out.extend(part.strip().upper() for part in value.split(",") if part.strip())
    return tuple(out)


def _check_selectors(option: str, selectors: tuple[str, ...]) -> None:
    from amplint.settings import SelectionError, expand_selectors, known_codes

    try:
        expand_selectors(selectors, known_codes())
    except SelectionError as exc:
        raise Failure(f"{option}: {exc}") from None


@main_group.command("check", context_settings=CONTEXT_SETTINGS, short_help="Lint files and directories (the default command).")
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--fix/--no-fix", default=False, help="Apply fixes (safe ones; add --unsafe-fixes for the rest).")
@click.option("--unsafe-fixes", is_flag=True, help="Also offer and apply unsafe fixes.")
@click.option("--diff", is_flag=True, help="Print the unified diff --fix would apply; write nothing (exit 1 if any).")
@click.option("--show-fixes", is_flag=True, help="With --fix/--diff: list what was fixed, per file and code.")
@click.option("--select", multiple=True, metavar="CODES", help="Rules to run (codes, prefixes or ALL; comma-separated). Replaces the configured selection.")
@click.option("--extend-select", multiple=True, metavar="CODES", help="Rules to run in addition to the selection.")
@click.option("--ignore", multiple=True, metavar="CODES", help="Rules not to run.")
@click.option("--exclude", multiple=True, metavar="PATTERN", help="Exclude patterns (gitignore syntax); replaces the defaults.")
@click.option("--extend-exclude", multiple=True, metavar="PATTERN", help="Exclude patterns added to the defaults.")
@click.option("--force-exclude", is_flag=True, help="Apply excludes to files named explicitly too (for pre-commit).")
@click.option("--respect-gitignore/--no-respect-gitignore", default=True, show_default=True, help="Skip files ignored by .gitignore.")
@click.option("--output-format", "--format", "output_format", type=click.Choice(OUTPUT_FORMATS), default=None,
              envvar="AMPLINT_OUTPUT_FORMAT", show_envvar=True,
              help="full (default; alias text), concise, grouped, json, json-lines, junit, github, gitlab, pylint, "
                   "azure, sarif or rdjson. Also the `output-format` configuration key.")
@click.option("-o", "--output-file", metavar="PATH", envvar="AMPLINT_OUTPUT_FILE", show_envvar=True,
              type=click.Path(dir_okay=False, path_type=str), help="Write the findings (or the diff) to PATH instead of stdout.")
@click.option("--statistics", is_flag=True, help="Show the number of findings per rule instead of the findings.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only: no summary, no warnings.")
@click.option("--config", "config_path", type=click.Path(path_type=str), help="Configuration file (pyproject.toml or amplint.toml).")
@click.option("--target-torch", metavar="VERSION", help="Oldest torch the code must run on, e.g. 2.2.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Parallel workers (default: the CPU cores).")
@click.option("--no-cache", is_flag=True, help="Do not read or write the result cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=str), help="Cache folder (default: .amplint_cache in the project root).")
@click.option("--no-prefilter", is_flag=True, help="Parse every file, even those without any AMP trigger text.")
@click.option("--no-project", is_flag=True,
              help="Lint each file on its own: do not follow calls into other modules of the project.")
@click.option("--stdin-filename", metavar="PATH", help="The name of the file read from stdin (`-`).")
@click.option("--add-noqa", is_flag=True, help="Add `# noqa: CODE` to every line with a finding (merging with existing noqa comments).")
def check_command(paths, **options) -> None:
    """Lint PATHS (files or directories; default `.`; `-` reads stdin)."""
    try:
        code = _check(list(paths), **options)
    except Failure as exc:
        _error(str(exc))
        code = EXIT_ERROR
    except BrokenPipeError:  # pragma: no cover - `amplint check | head`
        code = EXIT_ERROR
    except KeyboardInterrupt:
        # Here, not in main(): click would turn it into "Aborted!" and exit 1.
        _error("interrupted")
        code = EXIT_INTERRUPTED
    sys.exit(code)


def _settings_and_config(paths: list[str], options: dict):
    from amplint.config import ConfigError, resolve_config
    from amplint.settings import SelectionError, Settings, parse_torch_version

    if paths and paths[0] != "-":
        start = Path(paths[0])
    elif options["stdin_filename"]:
        start = Path(options["stdin_filename"])
    else:
        start = Path.cwd()
    try:
        config = resolve_config(options["config_path"], start if start.exists() else Path.cwd())
    except ConfigError as exc:
        raise Failure(str(exc)) from None

    cli_select = _split(options["select"])
    cli_extend = _split(options["extend_select"])
    cli_ignore = _split(options["ignore"])
    for option, selectors in (("--select", cli_select), ("--extend-select", cli_extend), ("--ignore", cli_ignore)):
        _check_selectors(option, selectors)
    target = config.target_torch
    if options["target_torch"]:
        try:
            target = parse_torch_version(options["target_torch"])
        except SelectionError as exc:
            raise Failure(f"--target-torch: {exc}") from None
    settings = Settings(
        select=cli_select or (config.select or ()),
        extend_select=(() if cli_select else config.extend_select) + cli_extend,
        ignore=config.ignore + cli_ignore,
        per_file_ignores=config.per_file_ignores,
        target_torch=target,
        prefilter=not options["no_prefilter"],
        project_analysis=config.project_analysis and not options.get("no_project", False),
        root=str(config.root.resolve()),
    )
    try:
        settings.validate()
    except SelectionError as exc:  # pragma: no cover - each part was checked above
        raise Failure(str(exc)) from None
    return settings, config, start


def _check(paths: list[str], **options) -> int:
    from amplint.report import HUMAN_FORMATS, canonical_format

    mode = "diff" if options["diff"] else "fix" if options["fix"] else "check"
    settings, config, start = _settings_and_config(paths, options)
    output_format = canonical_format(options["output_format"] or config.output_format or "full")
    use_stdin = paths == ["-"] or (not paths and options["stdin_filename"] is not None)
    if "-" in paths and not use_stdin:
        raise Failure("`-` (stdin) cannot be combined with other paths")
    human = output_format in HUMAN_FORMATS
    quiet = options["quiet"]

    if options["add_noqa"]:
        return _add_noqa(paths, settings, config, start, options, use_stdin, mode)

    edits = output_format in EDIT_FORMATS and not options["statistics"]
    if use_stdin:
        results, paths_map, missing = _run_stdin(settings, mode, options, edits), {}, 0
    else:
        results, paths_map, missing = _run_files(
            paths or ["."], settings, config, start, mode, options, quiet, edits
        )

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
    stdin_fixed_output = use_stdin and mode == "fix"
    out = sys.stderr if stdin_fixed_output else sys.stdout
    if mode == "diff":
        from amplint.report.diff import render_diffs

        text = render_diffs(changed)
    else:
        reporter = get_reporter(output_format)
        if options["statistics"]:
            text = reporter.render_statistics(statistics(findings, context), context)
        else:
            text = reporter.render(findings, context)
    _write_report(text, options["output_file"], out)

    if options["show_fixes"] and mode in ("fix", "diff"):
        _show_fixes(changed, settings, mode)
    if human and not quiet:
        click.echo(_summary(mode, findings, fixed, changed, unchecked, missing, context), err=True)

    if internal or missing:
        return EXIT_ERROR
    if options["exit_zero"]:
        return EXIT_OK
    if mode == "diff":
        return EXIT_FINDINGS if changed else EXIT_OK
    return EXIT_FINDINGS if findings or unreadable else EXIT_OK


def _write_report(text: str, output_file: str | None, stream) -> None:
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

    if use_stdin:
        raise Failure("--add-noqa writes files and cannot read stdin")
    if mode != "check":
        raise Failure("--add-noqa cannot be combined with --fix or --diff")
    results, paths_map, missing = _run_files(
        paths or ["."], settings, config, start, "check", {**options, "no_cache": True}, options["quiet"], False
    )
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
        _warning(f"{place}: no comment can go at the end of this line (inside a string or a continuation); not suppressed")
    if not options["quiet"]:
        click.echo(f"Added {_plural(outcome.added, 'noqa directive')}.", err=True)
    return EXIT_ERROR if missing or failed else EXIT_OK


# --------------------------------------------------------------------------- rules / rule


@main_group.command("rules", context_settings=CONTEXT_SETTINGS, short_help="List every rule.")
@click.option("--output-format", "--format", "output_format", type=click.Choice(["text", "json"]), default="text")
def rules_command(output_format: str) -> None:
    """List every rule: code, name, fix availability, severity, default."""
    from amplint.report.ruledoc import all_rule_rows

    rows = all_rule_rows()
    if output_format == "json":
        import json

        click.echo(json.dumps(rows, indent=2))
        return
    header = ("Code", "Name", "Fix", "Severity", "Default")
    table = [header] + [(r["code"], r["name"], r["fixable"], r["severity"], "on" if r["default"] else "off") for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


@main_group.command("rule", context_settings=CONTEXT_SETTINGS, short_help="Show one rule's documentation.")
@click.argument("code")
def rule_command(code: str) -> None:
    """Show the documentation of rule CODE (e.g. AMP003)."""
    from amplint.report.ruledoc import render_rule

    text = render_rule(code)
    if text is None:
        _error(f"unknown rule code '{code}' (see `amplint rules`)")
        sys.exit(EXIT_ERROR)
    click.echo(text, nl=False)


@main_group.command("server", context_settings=CONTEXT_SETTINGS, short_help="Run the language server for editors (needs amplint[lsp]).")
def server_command() -> None:
    """Speak the Language Server Protocol on stdin/stdout: diagnostics and quick fixes in editors."""
    try:
        from amplint.lsp.server import serve
    except ImportError as exc:
        if (getattr(exc, "name", None) or "").split(".")[0] in ("pygls", "lsprotocol"):
            _error("amplint server needs pygls: pip install 'amplint[lsp]'")
            sys.exit(EXIT_ERROR)
        raise
    serve()


# --------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> None:
    try:
        main_group.main(args=argv, prog_name="amplint")
    except KeyboardInterrupt:
        _error("interrupted")
        sys.exit(EXIT_INTERRUPTED)
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback (AMPLINT_DEBUG=1 shows it)
        if os.environ.get("AMPLINT_DEBUG"):
            raise
        _error(f"internal error: {type(exc).__name__}: {exc} (set AMPLINT_DEBUG=1 for a traceback)")
        sys.exit(EXIT_ERROR)


if __name__ == "__main__":  # pragma: no cover
    main()
