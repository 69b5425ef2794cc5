"""The commands besides ``check`` and ``verify``: ``rules``, ``rule``, ``server``, ``clean`` and ``version``."""

from __future__ import annotations

import json
import sys

import click

import amplint
from amplint.cli.common import EXIT_ERROR, _error, _plural
from amplint.cli.options import CONTEXT_SETTINGS


@click.command("rules", context_settings=CONTEXT_SETTINGS, short_help="List every rule.")
@click.option("--output-format", "--format", "output_format", type=click.Choice(["text", "json"]), default="text")
def rules_command(output_format: str) -> None:
    """List every rule: code, name, fix availability, severity, default."""
    from amplint.report.ruledoc import all_rule_rows

    rows = all_rule_rows()
    if output_format == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    header = ("Code", "Name", "Fix", "Severity", "Default")
    from amplint.report.ruledoc import fix_cell

    table = [header] + [(r["code"], r["name"], fix_cell(r), r["severity"], "on" if r["default"] else "off") for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


@click.command("rule", context_settings=CONTEXT_SETTINGS, short_help="Show one rule's documentation (or every rule's).")
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="Show the documentation of every rule.")
@click.option("--output-format", "--format", "output_format", type=click.Choice(["text", "json"]), default="text",
              help="text (Markdown, the default) or json (metadata and the documentation as `explanation`).")
def rule_command(code: str | None, show_all: bool, output_format: str) -> None:
    """Show the documentation of rule CODE (e.g. AMP003), or of every rule with --all."""
    from amplint.report.ruledoc import all_rule_rows, find_rule_row, render_rule

    if show_all == (code is not None):
        _error("give one rule CODE or --all (see `amplint rules`)")
        sys.exit(EXIT_ERROR)
    rows = all_rule_rows() if show_all else [find_rule_row(code or "")]
    if rows[0] is None:
        _error(f"unknown rule code '{code}' (see `amplint rules`)")
        sys.exit(EXIT_ERROR)
    if output_format == "json":
        documents = [{**row, "explanation": render_rule(row["code"])} for row in rows]
        click.echo(json.dumps(documents if show_all else documents[0], indent=2))
        return
    click.echo("\n".join(render_rule(row["code"]) or "" for row in rows), nl=False)


@click.command("server", context_settings=CONTEXT_SETTINGS,
               short_help="Run the language server for editors (needs amplint[lsp]).")
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


@click.command("version", context_settings=CONTEXT_SETTINGS, short_help="Show amplint's version.")
@click.option("--output-format", "--format", "output_format", type=click.Choice(["text", "json"]), default="text")
def version_command(output_format: str) -> None:
    """Show amplint's version (and, as json, the Python it runs on)."""
    if output_format == "json":
        import platform

        click.echo(json.dumps({"version": amplint.__version__, "python": platform.python_version()}, indent=2))
        return
    click.echo(f"amplint {amplint.__version__}")


@click.command("clean", context_settings=CONTEXT_SETTINGS, short_help="Remove amplint's cache folders.")
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=str), help="Also clean this cache folder.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
def clean_command(paths: tuple[str, ...], cache_dir: str | None, quiet: bool) -> None:
    """Remove the `.amplint_cache` folders in PATHS (default `.`) and below, and the project's cache.

    Only folders that carry amplint's CACHEDIR.TAG are touched, and in them only the files amplint
    writes; anything else is left in place, and so is the folder holding it.
    """
    from amplint.cli.clean import clean

    outcome = clean(list(paths) or ["."], cache_dir)
    for message in outcome.errors:
        _error(message)
    if not quiet:
        for kept in outcome.kept:
            click.echo(f"Kept {kept}: it holds files amplint did not write", err=True)
        names = f": {', '.join(outcome.removed)}" if outcome.removed else ""
        click.echo(f"Removed {_plural(len(outcome.removed), 'cache folder')}{names}.", err=True)
    sys.exit(EXIT_ERROR if outcome.errors else 0)
