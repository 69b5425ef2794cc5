"""A memory ceiling for each pool worker, so one file cannot take the machine's memory.

Parsing a pathological file (thousands of nested lambdas, a megabyte of one expression) can
take many gigabytes. Under the ceiling an allocation past it fails in that worker alone: Python
raises ``MemoryError`` (the file is reported "not linted") or the native parser aborts (the
pool replaces the worker and reports the file, see ``pool.py``). The other files are linted.

The ceiling is what linting one file may take: the machine's memory shared out among the
workers, at least ``FLOOR_BYTES``; ``AMPLINT_WORKER_MEMORY`` (``512M``, ``4G``, a number of
bytes, or ``0`` for none) sets it. It is enforced as the worker's address space
(``RLIMIT_AS``) on top of what the worker already maps when it starts (a forked worker inherits
its parent's mappings, which in a process that imported torch are gigabytes it never touches),
plus ``ALLOWANCE_BYTES`` for what a lint reserves and barely touches (the 512 MiB stack of the
deep-nesting thread). The main process is never limited: it
is the caller's (an editor, a test runner, the API).
"""

from __future__ import annotations

import os

ENV = "AMPLINT_WORKER_MEMORY"
FLOOR_BYTES = 2 * 1024**3
ALLOWANCE_BYTES = 1024**3  # the deep-nesting thread's 512 MiB stack, and headroom
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


class MemorySettingError(ValueError):
    """``AMPLINT_WORKER_MEMORY`` is not a size."""


def parse_size(text: str) -> int:
    """``"512M"`` -> bytes; ``"0"``: no ceiling."""
    value = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = value[-1:] if value[-1:] in _UNITS and value[-1:] else ""
    number = value[: -1] if unit else value
    try:
        size = float(number) * _UNITS[unit]
    except ValueError:
        raise MemorySettingError(f"{ENV}={text!r} is not a size such as 512M or 4G") from None
    if size < 0:
        raise MemorySettingError(f"{ENV}={text!r} is negative")
    return int(size)


def physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return None


def ceiling_for(workers: int, environ=os.environ) -> int | None:
    """Bytes each of ``workers`` workers may use; None: no ceiling."""
    if ENV in environ:
        size = parse_size(environ[ENV])
        return size or None
    total = physical_memory()
    if total is None:
        return None
    return max(FLOOR_BYTES, total // max(1, workers))


def mapped_bytes() -> int:
    """This process's address space now (Linux: ``VmSize``); 0 when unknown."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def limit_this_process(ceiling: int | None) -> None:
    """Let this process map at most ``ceiling`` (plus the allowance) more than it does now; never raise a limit."""
    if ceiling is None:
        return
    ceiling += mapped_bytes() + ALLOWANCE_BYTES
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        ceiling = min(ceiling, hard)
    if soft == resource.RLIM_INFINITY or soft > ceiling:
        try:
            resource.setrlimit(resource.RLIMIT_AS, (ceiling, hard))
        except (ValueError, OSError):
            pass
