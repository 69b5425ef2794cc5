"""The click side of the command line: the ``amplint`` group, ``check`` as its default command,
the other commands, and ``verify`` loaded lazily.

Imported when ``cli.fastparse`` leaves a command line to click: help, errors, and every command
besides a plain ``check``.
"""

from __future__ import annotations

import sys

import click

import amplint
from amplint.cli.common import _refuse_mistyped_command
from amplint.cli.check import check_entry
from amplint.cli.commands import clean_command, rule_command, rules_command, server_command, version_command
from amplint.cli.common import EXIT_ERROR, _error
from amplint.cli.options import CONTEXT_SETTINGS, check_options

_VERIFY_HELP = "Run a training script with AMP and check that it still trains (needs amplint[runtime])."


@click.command("check", context_settings=CONTEXT_SETTINGS, short_help="Lint files and directories (the default command).")
@check_options
def check_command(paths, **options) -> None:
    """Lint PATHS (files or directories; default `.`; `-` reads stdin)."""
    check_entry(list(paths), options)


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


for _command in (check_command, rules_command, rule_command, server_command, clean_command, version_command):
    main_group.add_command(_command)
