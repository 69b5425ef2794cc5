"""What every command of the CLI shares: one-line errors and warnings, and the exit-2 failure."""

from __future__ import annotations

import sys


def echo(message: str, err: bool = False) -> None:
    """One line to stdout (or stderr), flushed: what click.echo does for text, without importing click."""
    stream = sys.stderr if err else sys.stdout
    stream.write(f"{message}\n")
    stream.flush()


def _one_line(message: str) -> str:
    # Messages name files and quote input: keep them one inert line on the terminal.
    from amplint.report.escape import path_text, terminal

    return terminal(path_text(message))


def _error(message: str) -> None:
    echo(f"amplint: error: {_one_line(message)}", err=True)


def _warning(message: str) -> None:
    echo(f"amplint: warning: {_one_line(message)}", err=True)


class Failure(Exception):
    """A one-line error that ends the command with exit 2."""


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it
