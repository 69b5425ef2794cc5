"""How the ``amplint`` command runs Python's cyclic garbage collector.

Importing libcst and the facts layer makes a few hundred thousand objects (classes, functions,
their dictionaries) that live as long as the process. With the interpreter's defaults the
collections of older generations walk them all again, and so does the collection Python makes
when it exits: together about a sixth of linting one file with a finding (docs/performance.md).
So the command imports with the collector paused, then moves everything that exists into the
permanent generation (``gc.freeze``), which no collection walks. Garbage made afterwards, the
lint's own, is collected as usual; the thresholds stay the interpreter's (raising them saved
little more time and cost a quarter more memory on a large run).

Building a syntax tree (Python's ``ast`` of a file, libcst's module) makes hundreds of
thousands of objects that all stay alive until the tree is dropped, and hold no reference cycle
the tree itself could free: the collections its allocations trigger find nothing, and cost a
quarter of ``ast.parse`` on a large model file. The command builds trees with the collector
paused (:func:`building_tree`); the lint's other garbage is collected as usual.

This is the command's choice only. amplint used as a library (in a test, another tool or an
editor host) leaves its host's collector exactly as it is: ``importing`` does nothing unless
``amplint.cli.console_main`` started the process.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_short_command = False


def start_short_command() -> None:
    """This process is one ``amplint`` command: imports from here on are frozen once done."""
    global _short_command
    _short_command = True


@contextmanager
def importing() -> Iterator[None]:
    """Imports made within run with the collector paused; afterwards they are frozen."""
    if not _short_command:
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


@contextmanager
def building_tree() -> Iterator[None]:
    """A syntax tree built within runs with the collector paused (the command only); it is
    switched back on after, unless something else had switched it off."""
    if not _short_command or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
