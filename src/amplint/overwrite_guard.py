"""Whether a path amplint is about to write is one of the run's inputs.

Nothing in the write itself tells a report path from the file it reports on: ``-o t.py t.py``
would replace the file just linted (or fixed) with its report, ``verify train.py --json train.py``
the script with JSON. So every command compares each path it writes, other than the fixes, with
its inputs here, before it lints or runs anything, and refuses. Standard library only: ``check``
imports this on every run.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable


def overwrite_refusal(named: str, output: str | os.PathLike, inputs: Iterable[str | os.PathLike]) -> str | None:
    """The one-line refusal when writing ``output`` would replace one of ``inputs``, else None.

    ``named`` is how the user gave the output (``--output-file t.py``), so the message points
    at the option to change.
    """
    given = overwritten_input(output, inputs)
    if given is None:
        return None
    also = "an input" if os.fspath(given) == os.fspath(output) else f"an input ({os.fspath(given)})"
    return f"{named} is also {also}; refusing to overwrite it"


def overwritten_input(output: str | os.PathLike, inputs: Iterable[str | os.PathLike]) -> str | os.PathLike | None:
    """The first of ``inputs`` that writing the file ``output`` would replace, or None.

    An existing output is compared by identity (device and inode), so a symbolic or hard link,
    ``./t.py`` beside ``t.py`` and ``T.py`` on a case-insensitive file system all count. One that
    does not exist yet can only be an input that does not exist either (a ``--stdin-filename`` not
    saved yet): those are compared by resolved name.
    """
    target = _stat(output)
    if target is not None and not stat.S_ISREG(target.st_mode):
        return None  # writing to /dev/null, a pipe or a terminal replaces nothing
    name = _real(output) if target is None else ""
    for given in inputs:
        found = _stat(given)
        if target is not None:
            if found is not None and os.path.samestat(target, found):
                return given
        elif found is None and _real(given) == name:
            return given
    return None


def input_inside(folder: str | os.PathLike, inputs: Iterable[str | os.PathLike]) -> str | os.PathLike | None:
    """The first of ``inputs`` that is ``folder`` or lies below it, or None (for a cache folder)."""
    target = _stat(folder)
    name = _real(folder)
    base = os.path.basename(name).casefold()
    for given in inputs:
        real = _real(given)
        for ancestor in _self_and_parents(real):
            if ancestor == name:
                return given
            # Only a folder of the same name, ignoring case, can be ``folder`` under another
            # spelling (a case-insensitive file system): stat just those.
            if target is not None and os.path.basename(ancestor).casefold() == base:
                found = _stat(ancestor)
                if found is not None and os.path.samestat(target, found):
                    return given
    return None


def _self_and_parents(path: str) -> Iterable[str]:
    while True:
        yield path
        parent = os.path.dirname(path)
        if parent == path:
            return
        path = parent


def _real(path: str | os.PathLike) -> str:
    try:
        return os.path.normcase(os.path.realpath(os.fspath(path)))
    except (OSError, ValueError):  # ValueError: a NUL in the name
        return os.path.normcase(os.path.abspath(os.fspath(path)))


def _stat(path: str | os.PathLike) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (OSError, ValueError):  # ValueError: a NUL in the name
        return None
