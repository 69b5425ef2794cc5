"""The ``amplint`` command line: the group, ``check`` as its default command, and ``verify`` loaded lazily.

The commands live in ``cli_check`` (with ``cli_options``, ``cli_settings``, ``cli_run``,
``cli_watch``) and ``cli_commands`` (``rules``, ``rule``, ``server``, ``clean``, ``version``).

Kept cheap to import: only click at module level. The engine, the reporters and the runtime
companion are imported when a command needs them (``amplint --version`` imports no rule,
and nothing here ever imports torch).
"""

from __future__ import annotations

import os
import sys

import click

import amplint
from amplint.cli_check import check_command
from amplint.cli_commands import clean_command, rule_command, rules_command, server_command, version_command
from amplint.cli_common import EXIT_ERROR, EXIT_INTERRUPTED, _error
from amplint.cli_options import CONTEXT_SETTINGS, OUTPUT_FORMATS  # noqa: F401  (OUTPUT_FORMATS: kept importable here)
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


for _command in (check_command, rules_command, rule_command, server_command, clean_command, version_command):
    main_group.add_command(_command)


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
