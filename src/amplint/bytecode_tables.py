"""Tables of what an earlier run worked out, kept beside amplint's bytecode.

Python reuses a module's compiled code instead of compiling its source again; these tables do the
same for work of amplint's own start-up (the compiled methods of dataclasses, the rules'
metadata). A table lives in amplint's ``__pycache__`` (honouring ``sys.pycache_prefix``), is
named for the interpreter (``cpython-311``) and starts with the interpreter's bytecode magic
number. It is written atomically, and only where Python itself may write bytecode (not under
``-B`` or ``PYTHONDONTWRITEBYTECODE``). Any problem reading or writing one costs speed, never
correctness: the work is then simply done again.
"""

from __future__ import annotations

import marshal
import os
import sys
from importlib.util import MAGIC_NUMBER, cache_from_source
from pathlib import Path


def table_path(name: str) -> Path | None:
    """Where the table ``name`` lives (None: this interpreter keeps no bytecode)."""
    try:
        module_cache = Path(cache_from_source(os.path.join(os.path.dirname(__file__), "__init__.py")))
    except NotImplementedError:  # sys.implementation.cache_tag is None
        return None
    tag = module_cache.name.split(".")[1]  # __init__.cpython-311.pyc -> cpython-311
    return module_cache.with_name(f"{name}.{tag}.marshal")


def read_table(path: Path) -> dict:
    """The table at ``path``; empty when it is missing, unreadable or from another interpreter."""
    try:
        data = path.read_bytes()
        if not data.startswith(MAGIC_NUMBER):
            return {}
        table = marshal.loads(data[len(MAGIC_NUMBER):])
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    return table if isinstance(table, dict) else {}


def may_write() -> bool:
    return not sys.dont_write_bytecode


def write_table(path: Path, table: dict) -> None:
    """Replace the table at ``path`` in one step; a failure leaves the old one (or none)."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(MAGIC_NUMBER + marshal.dumps(table))
        os.replace(temporary, path)
    except (OSError, ValueError):
        try:
            temporary.unlink()
        except OSError:
            pass
