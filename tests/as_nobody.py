"""Run a function as the unprivileged user ``nobody``, for permission cases in tests run as root.

A forked child drops root with os.setgid/os.setuid and runs the function in the already
loaded interpreter (whose own files under /root may not be readable by nobody: import
what the function needs before calling). Not root: the function runs as the current user.
"""

from __future__ import annotations

import os
import pickle

NOBODY = 65534


def as_nobody(function, *args):
    """Run ``function(*args)`` in a forked child that has dropped root; return its result."""
    if os.geteuid() != 0:
        return function(*args)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read)
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            payload = pickle.dumps(("ok", function(*args)))
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            payload = pickle.dumps(("error", repr(exc)))
        with os.fdopen(write, "wb") as pipe:
            pipe.write(payload)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    status, value = pickle.loads(data)
    assert status == "ok", value
    return value
