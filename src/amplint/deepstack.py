"""Run linting on a thread with a deep stack, so that valid but deeply nested code is linted.

libcst's parser, its code generation and amplint's own walk recurse once per nesting level:
1,000 ``elif``s, a 1,000-deep ``and`` chain or a long chain of calls exhaust the default
recursion limit (a RecursionError) and, in libcst's native parser, the C stack (a crash that
takes the process with it). On a thread with a large stack both limits can be raised safely:
the stack is virtual memory, committed only as deep as the code actually goes.
"""

from __future__ import annotations

import sys
import threading
from typing import Callable, TypeVar

T = TypeVar("T")

STACK_BYTES = 512 * 1024 * 1024
RECURSION_LIMIT = 200_000
_lock = threading.Lock()


def run_with_deep_stack(function: Callable[..., T], *args, **kwargs) -> T:
    """``function(*args, **kwargs)``, run on a thread with a deep stack; its exception re-raised here."""
    if getattr(_local, "deep", False):
        return function(*args, **kwargs)  # already on a deep thread (a fix pass re-lints)
    outcome: list = []

    def target() -> None:
        _local.deep = True
        try:
            outcome.append((True, function(*args, **kwargs)))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            outcome.append((False, exc))

    # One deep thread at a time: the recursion limit is process-wide, and it is raised only
    # while a thread with the stack for it runs (the main thread's stack is not that deep).
    with _lock:
        previous_stack, previous_limit = threading.stack_size(), sys.getrecursionlimit()
        sys.setrecursionlimit(max(previous_limit, RECURSION_LIMIT))
        try:
            try:
                threading.stack_size(STACK_BYTES)  # applies to threads started from now on
            except (ValueError, RuntimeError):  # a platform that refuses a stack this large
                return function(*args, **kwargs)
            try:
                thread = threading.Thread(target=target, name="amplint-lint", daemon=True)
                thread.start()
            finally:
                threading.stack_size(previous_stack)
            thread.join()
        finally:
            sys.setrecursionlimit(previous_limit)
    ok, value = outcome[0]
    if ok:
        return value
    raise value


_local = threading.local()
