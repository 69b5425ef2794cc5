"""Reuse the compiled methods of dataclasses across runs, the way Python reuses compiled modules.

``@dataclass`` writes the source of ``__init__``, ``__eq__``, ``__hash__``... for each class and
compiles it with ``exec`` when the class is defined. libcst defines a few hundred node classes
that way: on Python 3.10-3.12 compiling those sources is about half of ``import libcst``, which
is most of what linting one file costs. Source text compiles to the same code object every time,
so while the parsing modules are imported, ``dataclasses`` gets an ``exec`` that looks each source
up in a table of code objects compiled by an earlier run, and compiles only what is new.

The table lives beside amplint's own bytecode (``bytecode_tables``) and is written only when
something was compiled. Any problem reading or writing it costs speed, never correctness: the
sources are then simply compiled.
"""

from __future__ import annotations

import builtins
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import amplint.bytecode_tables as bytecode_tables


class _InspectOnFirstUse(types.ModuleType):
    """Stands for ``inspect`` in ``dataclasses`` until ``dataclasses`` uses it.

    On Python 3.10 and 3.11 ``dataclasses`` uses ``inspect`` only to write a docstring for a
    class that has none, and importing it (with ``dis``) is a twentieth of a run that prints
    "All checks passed!". The first attribute read imports the real module, which then replaces
    this one in ``dataclasses``; ``sys.modules`` holds this stand-in only while ``dataclasses``
    is imported, so every other ``import inspect`` gets the real module.
    """

    def __getattr__(self, name: str):
        import importlib

        if sys.modules.get("inspect") is self:  # used while dataclasses is still being imported
            del sys.modules["inspect"]
        real = importlib.import_module("inspect")
        sys.modules["dataclasses"].inspect = real
        return getattr(real, name)


def _import_dataclasses():
    if "dataclasses" in sys.modules or "inspect" in sys.modules:
        import dataclasses

        return dataclasses
    stand_in = _InspectOnFirstUse("inspect")
    sys.modules["inspect"] = stand_in
    try:
        import dataclasses
    finally:
        if sys.modules.get("inspect") is stand_in:
            del sys.modules["inspect"]
    return dataclasses


dataclasses = _import_dataclasses()

# Sources from other versions of the imported libraries stop being looked up but stay in the
# table; past this size a write keeps only what the last run used.
MAX_ENTRIES = 4000


def table_path(phase: str) -> Path | None:
    """Where the table of ``phase``'s compiled dataclass methods lives (None: no bytecode kept).

    One table per phase of a run (start-up, parsing), so that a run that never parses a file
    reads only the small start-up table.
    """
    return bytecode_tables.table_path(f"dataclass-code-{phase}")


@contextmanager
def reused_dataclass_code(phase: str, path: Path | None = None) -> Iterator[None]:
    """Within the block, dataclass methods compile from ``phase``'s table (or the one at ``path``)."""
    path = path if path is not None else table_path(phase)
    if path is None or "exec" in vars(dataclasses):  # no bytecode, or already inside the block
        yield
        return
    known = bytecode_tables.read_table(path)
    used: dict[str, object] = {}
    compiled = 0

    def exec_reusing_code(source, globals=None, locals=None):
        nonlocal compiled
        if isinstance(source, str):
            code = known.get(source)
            if code is None:
                code = compile(source, "<string>", "exec")
                compiled += 1
            used[source] = code
            source = code
        return builtins.exec(source, globals, locals)

    dataclasses.exec = exec_reusing_code  # module globals come before builtins in name lookup
    try:
        yield
    finally:
        del dataclasses.exec
    if compiled and bytecode_tables.may_write():
        merged = {**known, **used}
        bytecode_tables.write_table(path, merged if len(merged) <= MAX_ENTRIES else used)
