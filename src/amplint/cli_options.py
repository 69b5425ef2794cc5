"""``amplint check``'s options, as one decorator, so that the command's module holds only its logic."""

from __future__ import annotations

import click

# The same names as amplint.report.FORMATS (a test keeps them equal), written out so that
# building the command line imports no reporter.
OUTPUT_FORMATS = (
    "full", "concise", "grouped", "json", "json-lines", "junit", "github", "gitlab", "pylint", "azure", "sarif",
    "rdjson", "text",
)
CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

_OPTIONS = (
    click.argument("paths", nargs=-1, type=click.Path(path_type=str)),
    click.option("--fix/--no-fix", default=False, help="Apply fixes (safe ones; add --unsafe-fixes for the rest)."),
    click.option("--unsafe-fixes", is_flag=True, help="Also offer and apply unsafe fixes."),
    click.option("--fix-only/--no-fix-only", default=False,
                 help="Apply fixes (implies --fix) and report nothing about the findings that remain; exit 0."),
    click.option("--diff", is_flag=True, help="Print the unified diff --fix would apply; write nothing (exit 1 if any)."),
    click.option("--show-fixes", is_flag=True, help="With --fix/--diff: list what was fixed, per file and code."),
    click.option("--exit-non-zero-on-fix", is_flag=True,
                 help="Exit 1 when --fix changed a file, even if no finding remains."),
    click.option("--unfixable", multiple=True, metavar="CODES", help="Rules whose fixes are neither offered nor applied."),
    click.option("--select", multiple=True, metavar="CODES",
                 help="Rules to run (codes, prefixes or ALL; comma-separated). Replaces the configured selection."),
    click.option("--extend-select", multiple=True, metavar="CODES", help="Rules to run in addition to the selection."),
    click.option("--ignore", multiple=True, metavar="CODES", help="Rules not to run."),
    click.option("--extend-ignore", multiple=True, metavar="CODES", help="Same as --ignore (ruff's older spelling)."),
    click.option("--exclude", multiple=True, metavar="PATTERN",
                 help="Exclude patterns (gitignore syntax); replaces the defaults."),
    click.option("--extend-exclude", multiple=True, metavar="PATTERN", help="Exclude patterns added to the defaults."),
    click.option("--extend-include", multiple=True, metavar="GLOB",
                 help="More files to find in directories besides *.py, *.pyi, *.ipynb (e.g. '*.pyw', 'scripts/*')."),
    click.option("--extension", multiple=True, metavar="EXT:LANG",
                 help="Read files ending in .EXT as LANG (python, pyi or ipynb), e.g. pyw:python; "
                      "they are found in directories too."),
    click.option("--force-exclude", is_flag=True, help="Apply excludes to files named explicitly too (for pre-commit)."),
    click.option("--respect-gitignore/--no-respect-gitignore", default=True, show_default=True,
                 help="Skip files ignored by .gitignore."),
    click.option("--output-format", "--format", "output_format", type=click.Choice(OUTPUT_FORMATS), default=None,
                 envvar="AMPLINT_OUTPUT_FORMAT", show_envvar=True,
                 help="full (default; alias text), concise, grouped, json, json-lines, junit, github, gitlab, pylint, "
                      "azure, sarif or rdjson. Also the `output-format` configuration key."),
    click.option("-o", "--output-file", metavar="PATH", envvar="AMPLINT_OUTPUT_FILE", show_envvar=True,
                 type=click.Path(dir_okay=False, path_type=str),
                 help="Write the findings (or the diff) to PATH instead of stdout."),
    click.option("--statistics", is_flag=True, help="Show the number of findings per rule instead of the findings."),
    click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain."),
    click.option("-q", "--quiet", is_flag=True, help="Print findings only: no summary, no warnings."),
    click.option("-v", "--verbose", is_flag=True,
                 help="Also say which configuration, files and cache are used, and how long it took."),
    click.option("--config", "config_path", type=click.Path(path_type=str),
                 help="Configuration file (pyproject.toml or amplint.toml)."),
    click.option("--isolated", is_flag=True, help="Ignore all configuration files (defaults plus the flags given)."),
    click.option("--target-torch", metavar="VERSION", help="Oldest torch the code must run on, e.g. 2.2."),
    click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Parallel workers (default: the CPU cores)."),
    click.option("--no-cache", is_flag=True, help="Do not read or write the result cache."),
    click.option("--cache-dir", type=click.Path(file_okay=False, path_type=str),
                 help="Cache folder (default: .amplint_cache in the project root)."),
    click.option("--no-prefilter", is_flag=True, help="Parse every file, even those without any AMP trigger text."),
    click.option("--no-project", is_flag=True,
                 help="Lint each file on its own: do not follow calls into other modules of the project."),
    click.option("--stdin-filename", metavar="PATH", help="The name of the file read from stdin (`-`)."),
    click.option("--add-noqa", is_flag=True,
                 help="Add `# noqa: CODE` to every line with a finding (merging with existing noqa comments)."),
    click.option("--show-files", is_flag=True, help="List the files that would be checked, and exit."),
    click.option("--show-settings", is_flag=True, help="Show the settings the first file would be checked with, and exit."),
    click.option("-w", "--watch", is_flag=True,
                 help="Check again whenever a checked file or the configuration changes (Ctrl-C ends)."),
)


def check_options(function):
    """Apply every option of ``amplint check`` to ``function`` (in the order --help lists them)."""
    for option in reversed(_OPTIONS):
        function = option(function)
    return function
