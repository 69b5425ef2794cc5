"""The safety net under the redirect: a write that gets past it is refused, not carried out.

``fs_patches`` redirects the Python functions that write files, but code can still reach the file
system around them: ``io.FileIO(path, "wb")``, a reference to ``os.remove`` or ``open`` taken
before the run (``tarfile``'s, ``bz2``'s), ``os.fchmod``/``fchown``/``futime`` on a descriptor of a
real file, a symlink the script made that leads a shadow path back out. CPython raises an audit
event (PEP 578) for each of these operations before it makes it; while a run is in progress this
hook refuses every one whose target, symlinks resolved, is a protected path, and the overlay
records it, so verify reports that it cannot judge the script instead of writing over a user's
file. Writers in native code that open files themselves raise no event: ``checkpoints`` redirects
the ones torch and safetensors use; any other one is not covered.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from .overlay import Overlay
from .realfs import kernel_path, path_of, real
from .sites import user_frame

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# event -> (index of a path it changes, index of the dir_fd that path is relative to, or None)
_EVENTS: dict[str, tuple[tuple[int, int | None], ...]] = {
    "open": ((0, None),),
    "os.mkdir": ((0, 2),), "os.remove": ((0, 1),), "os.rmdir": ((0, 1),),
    "os.rename": ((0, 2), (1, 3)), "os.link": ((1, 3),), "os.symlink": ((1, 2),),
    "os.chmod": ((0, 2),), "os.chown": ((0, 3),), "os.utime": ((0, 3),), "os.truncate": ((0, None),),
    "os.setxattr": ((0, None),), "os.removexattr": ((0, None),), "shutil.rmtree": ((0, 1),),
}
_active: Overlay | None = None
_last: Overlay | None = None  # the latest run's, for keep_refusing
_sealed = False
_hooked = False


def arm(patcher: Any, overlay: Overlay) -> None:
    """Guard ``overlay``'s run until ``patcher`` is undone (an audit hook cannot be removed: it
    stays, idle, for the rest of the process)."""
    global _active, _last, _hooked
    if not _hooked:
        sys.addaudithook(_hook)
        _hooked = True
    _active = _last = overlay
    patcher.on_undo(_disarm)


def keep_refusing() -> None:
    """From now on refuse the protected writes of the run just ended, patches undone or not: for a
    process that only reports and exits, where a thread the script left running (an async
    checkpoint saver) would otherwise write for real."""
    global _sealed
    _sealed = True


def _disarm() -> None:
    global _active
    _active = None


def _hook(event: str, args: tuple) -> None:
    spec = _EVENTS.get(event)
    ov = _active if _active is not None and _active.active else _last if _sealed else None
    if spec is None or ov is None:
        return
    if event == "open" and not (isinstance(args[2], int) and args[2] & _WRITE_FLAGS):
        return
    for index, fd_index in spec:
        target = args[index]
        by_fd = isinstance(target, int) and event != "open"  # os.fchmod & co. on a descriptor
        path = _event_path(_fd_path(target) if by_fd else target, args[fd_index] if fd_index is not None else None)
        if path is not None and ov.protected(path):
            how = (f"{event} on a file descriptor of the real file" if by_fd
                   else "a symlink leads this write out of verify's copy" if path.startswith(ov.root + os.sep)
                   else _bypass(event))
            file, line = user_frame()
            raise ov.refuse(kernel_path(path), how, f"{file}:{line}")


def _bypass(event: str) -> str:
    if event == "open":
        return "a write-mode open past builtins.open and os.open, such as io.FileIO"
    return f"{event} through a reference taken before verify's patch"


def _event_path(path: Any, dir_fd: Any) -> str | None:
    found = path_of(path, dir_fd)
    if found is None and isinstance(path, (str, bytes, os.PathLike)) and os.fspath(path):
        found = os.path.abspath(os.fsdecode(os.fspath(path)))  # an unknown dir_fd: judged from the cwd
    return found


def _fd_path(fd: int) -> str | None:
    try:
        path = real.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    return path if path.startswith(os.sep) else None  # pipes and sockets name no file
