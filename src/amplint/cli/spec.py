"""The options of ``amplint check``, as plain data.

One table serves both parsers: ``cli.options`` turns it into click options (help, errors, every
unusual spelling), and ``cli.fastparse`` reads the common command lines with it without
importing click. Nothing here imports more than the standard library's basics.
"""

from __future__ import annotations

# The same names as amplint.report.FORMATS (a test keeps them equal), written out so that
# building the command line imports no reporter.
OUTPUT_FORMATS = (
    "full", "concise", "grouped", "json", "json-lines", "junit", "github", "gitlab", "pylint", "azure", "sarif",
    "rdjson", "text",
)

# Kinds of option: a FLAG is on when given; a SWITCH is a --name/--no-name pair; MULTIPLE
# collects every value given (a tuple); VALUE keeps the last value given (None if none).
FLAG, SWITCH, MULTIPLE, VALUE = "flag", "switch", "multiple", "value"


class CheckOption:
    """One option of ``amplint check``: its spellings, what it holds and its help text."""

    __slots__ = ("names", "dest", "kind", "help", "default", "off_names", "metavar", "choices", "envvar",
                 "minimum", "file_okay", "dir_okay", "is_path", "show_default")

    def __init__(self, kind: str, names: tuple[str, ...], help: str, *, dest: str | None = None,
                 default=None, off_names: tuple[str, ...] = (), metavar: str | None = None,
                 choices: tuple[str, ...] | None = None, envvar: str | None = None, minimum: int | None = None,
                 is_path: bool = False, file_okay: bool = True, dir_okay: bool = True,
                 show_default: bool = False) -> None:
        self.kind, self.names, self.help = kind, names, help
        self.dest = dest or names[-1].lstrip("-").replace("-", "_")
        self.default = default if kind != MULTIPLE else ()
        if kind == FLAG:
            self.default = False
        self.off_names, self.metavar, self.choices, self.envvar = off_names, metavar, choices, envvar
        self.minimum, self.is_path, self.file_okay, self.dir_okay = minimum, is_path, file_okay, dir_okay
        self.show_default = show_default

    @property
    def takes_value(self) -> bool:
        return self.kind in (MULTIPLE, VALUE)


def _flag(names: str, help: str) -> CheckOption:
    return CheckOption(FLAG, tuple(names.split()), help)


def _switch(on: str, off: str, default: bool, help: str, show_default: bool = False) -> CheckOption:
    return CheckOption(SWITCH, (on,), help, default=default, off_names=(off,), show_default=show_default)


def _multiple(name: str, metavar: str, help: str) -> CheckOption:
    return CheckOption(MULTIPLE, (name,), help, metavar=metavar)


# In the order `amplint check --help` lists them.
CHECK_OPTIONS = (
    _switch("--fix", "--no-fix", False, "Apply fixes (safe ones; add --unsafe-fixes for the rest)."),
    _flag("--unsafe-fixes", "Also offer and apply unsafe fixes."),
    _switch("--fix-only", "--no-fix-only", False,
            "Apply fixes (implies --fix) and report nothing about the findings that remain; exit 0."),
    _flag("--diff", "Print the unified diff --fix would apply; write nothing (exit 1 if any)."),
    _flag("--show-fixes", "With --fix/--diff: list what was fixed, per file and code."),
    _flag("--exit-non-zero-on-fix", "Exit 1 when --fix changed a file, even if no finding remains."),
    _flag("--partial-fixes",
          "With --fix: write the fixes of the files checked even when another file could not be checked."),
    _multiple("--unfixable", "CODES", "Rules whose fixes are neither offered nor applied."),
    _multiple("--select", "CODES",
              "Rules to run (codes, prefixes or ALL; comma-separated). Replaces the configured selection."),
    _multiple("--extend-select", "CODES", "Rules to run in addition to the selection."),
    _multiple("--ignore", "CODES", "Rules not to run."),
    _multiple("--extend-ignore", "CODES", "Same as --ignore (ruff's older spelling)."),
    _multiple("--exclude", "PATTERN", "Exclude patterns (gitignore syntax); replaces the defaults."),
    _multiple("--extend-exclude", "PATTERN", "Exclude patterns added to the defaults."),
    _multiple("--extend-include", "GLOB",
              "More files to find in directories besides *.py, *.pyi, *.ipynb (e.g. '*.pyw', 'scripts/*')."),
    _multiple("--extension", "EXT:LANG",
              "Read files ending in .EXT as LANG (python, pyi or ipynb), e.g. pyw:python; "
              "they are found in directories too."),
    _flag("--force-exclude", "Apply excludes to files named explicitly too (for pre-commit)."),
    _switch("--respect-gitignore", "--no-respect-gitignore", True, "Skip files ignored by .gitignore.",
            show_default=True),
    CheckOption(VALUE, ("--output-format", "--format"), dest="output_format", choices=OUTPUT_FORMATS,
                envvar="AMPLINT_OUTPUT_FORMAT",
                help="full (default; alias text), concise, grouped, json, json-lines, junit, github, gitlab, pylint, "
                     "azure, sarif or rdjson. Also the `output-format` configuration key."),
    CheckOption(VALUE, ("-o", "--output-file"), metavar="PATH", envvar="AMPLINT_OUTPUT_FILE", is_path=True,
                dir_okay=False, help="Write the findings (or the diff) to PATH instead of stdout."),
    _flag("--statistics", "Show the number of findings per rule instead of the findings."),
    _flag("--exit-zero", "Exit 0 even when findings remain."),
    _flag("-q --quiet", "Print findings only: no summary, no warnings."),
    _flag("-v --verbose", "Also say which configuration, files and cache are used, and how long it took."),
    CheckOption(VALUE, ("--config",), dest="config_path", is_path=True,
                help="Configuration file (pyproject.toml, amplint.toml or .amplint.toml)."),
    _flag("--isolated", "Ignore all configuration files (defaults plus the flags given)."),
    CheckOption(VALUE, ("--target-torch",), metavar="VERSION", help="Oldest torch the code must run on, e.g. 2.2."),
    CheckOption(VALUE, ("-j", "--jobs"), minimum=1, help="Parallel workers (default: the CPU cores)."),
    _flag("--no-cache", "Do not read or write the result cache."),
    CheckOption(VALUE, ("--cache-dir",), is_path=True, file_okay=False,
                help="Cache folder (default: .amplint_cache in the project root)."),
    _flag("--no-prefilter", "Parse every file, even those without any AMP trigger text."),
    _flag("--no-project", "Lint each file on its own: do not follow calls into other modules of the project."),
    CheckOption(VALUE, ("--stdin-filename",), metavar="PATH", help="The name of the file read from stdin (`-`)."),
    _flag("--add-noqa", "Add `# noqa: CODE` to every line with a finding (merging with existing noqa comments)."),
    _flag("--show-files", "List the files that would be checked, and exit."),
    _flag("--show-settings", "Show the settings the first file would be checked with, and exit."),
    _flag("-w --watch", "Check again whenever a checked file or the configuration changes (Ctrl-C ends)."),
)
