"""What every command of the CLI shares: one-line errors and warnings, and the exit-2 failure."""

from __future__ import annotations

import os
import sys
from pathlib import Path


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


# The group's commands (a test keeps this equal to the click group's list).
COMMANDS = ("check", "rules", "rule", "server", "clean", "version", "verify")


def _refuse_mistyped_command(word: str, commands=COMMANDS) -> None:
    """Exit 2 when ``word`` is a near miss of a command (``chek``) rather than a path to lint."""
    import re

    if not re.fullmatch(r"[a-z][a-z-]*", word) or os.path.exists(word):
        return
    import difflib

    close = difflib.get_close_matches(word, list(commands), n=1, cutoff=0.6)
    if close:
        _error(f"unknown command '{word}' (did you mean '{close[0]}'?)")
        sys.exit(EXIT_ERROR)


def _display(path: Path) -> str:
    """A path as the run shows it: relative to the working folder when inside it."""
    text = os.path.normpath(str(path))
    if os.path.isabs(text):
        # What relpath gives without its own normalising of both paths: a path outside the
        # working folder (the case of every file of a run over another tree) stays as it is.
        here = os.getcwd()
        if not text.startswith(os.path.join(here, "")) and text != here:
            return text
        try:
            rel = os.path.relpath(text, here)
        except ValueError:  # pragma: no cover - other drive
            return text
        if not rel.startswith(".."):
            return rel
    return text
