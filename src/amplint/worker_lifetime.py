"""Pool workers end with the run that started them, and never in the middle of writing a file.

A worker whose parent is killed would otherwise be re-parented and go on fixing files nobody
asked for any more, holding the caller's stdout open. Each worker asks the kernel for a
SIGTERM when its parent dies (Linux), or polls for it elsewhere, and ignores SIGINT: a Ctrl-C
reaches the whole process group, and it is the parent that decides how the run ends.

A termination request that arrives while a fixed file is being written waits until that file
is written or given up, so every file is either the original or the complete fix.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator

_PR_SET_PDEATHSIG = 1
_POLL_SECONDS = 0.5

_writing = False
_stop_requested = False


def init_worker(parent_pid: int) -> None:
    """``ProcessPoolExecutor`` initializer."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_terminate)
    if not _ask_kernel_for_parent_death_signal():
        threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()
    if os.getppid() != parent_pid:  # the parent died before the request was in place
        _exit_now()


@contextmanager
def finishing_writes() -> Iterator[None]:
    """Defer a termination request until the block (one file's write) is done."""
    global _writing
    _writing = True
    try:
        yield
    finally:
        _writing = False
        if _stop_requested:
            _exit_now()


def stop_workers(pool) -> None:
    """Ask each worker of ``pool`` to end now (after a write in progress)."""
    for process in list(getattr(pool, "_processes", {}).values()):
        try:
            process.terminate()
        except (OSError, ValueError, AttributeError):
            pass


def _on_terminate(signum, frame) -> None:
    global _stop_requested
    if _writing:
        _stop_requested = True
        return
    _exit_now()


def _exit_now() -> None:
    os._exit(128 + signal.SIGTERM)


def _ask_kernel_for_parent_death_signal() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent_pid: int) -> None:
    import time

    while os.getppid() == parent_pid:
        time.sleep(_POLL_SECONDS)
    os.kill(os.getpid(), signal.SIGTERM)
