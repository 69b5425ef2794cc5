"""``amplint check``'s options as click options, built from the table in ``cli.spec``."""

from __future__ import annotations

import click

from amplint.cli.spec import CHECK_OPTIONS, FLAG, MULTIPLE, OUTPUT_FORMATS, SWITCH, CheckOption  # noqa: F401

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _click_type(option: CheckOption):
    if option.choices is not None:
        return click.Choice(option.choices)
    if option.minimum is not None:
        return click.IntRange(min=option.minimum)
    if option.is_path:
        return click.Path(file_okay=option.file_okay, dir_okay=option.dir_okay, path_type=str)
    return None


def _click_option(option: CheckOption):
    if option.kind == SWITCH:
        return click.option(f"{option.names[0]}/{option.off_names[0]}", default=option.default,
                            show_default=option.show_default, help=option.help)
    declarations = [*option.names, option.dest]
    if option.kind == FLAG:
        return click.option(*declarations, is_flag=True, help=option.help)
    extra = {"multiple": True} if option.kind == MULTIPLE else {"default": None}
    if option.envvar is not None:
        extra.update(envvar=option.envvar, show_envvar=True)
    return click.option(*declarations, type=_click_type(option), metavar=option.metavar, help=option.help, **extra)


_OPTIONS = (
    click.argument("paths", nargs=-1, type=click.Path(path_type=str)),
    *(_click_option(option) for option in CHECK_OPTIONS),
)


def check_options(function):
    """Apply every option of ``amplint check`` to ``function`` (in the order --help lists them)."""
    for option in reversed(_OPTIONS):
        function = option(function)
    return function
