"""The file system as it really is, through the functions verify does not patch.

The overlay, the guard and the patched functions use these: the patched ones answer for the
script's view. Captured when this module is first imported, before any run has patched ``os``.
Everything here that writes is only ever given paths in verify's directory or on scratch space.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import tempfile
from types import SimpleNamespace
from typing import Any, Callable

real = SimpleNamespace(
    open=io.open, stat=os.stat, lstat=os.lstat, listdir=os.listdir, scandir=os.scandir, mkdir=os.mkdir,
    rmdir=os.rmdir, unlink=os.unlink, replace=os.replace, readlink=os.readlink, symlink=os.symlink,
    link=getattr(os, "link", None), chmod=os.chmod, utime=os.utime,
)

_CACHE_VARS = ("XDG_CACHE_HOME", "TORCH_HOME", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TRITON_HOME",
               "HF_HOME", "TORCH_EXTENSIONS_DIR")


def scratch_roots() -> list[str]:
    """Where the script's writes are real: scratch and cache space that compiled kernels, downloads
    and helper processes share, none of it the user's work."""
    home = os.path.expanduser("~")
    roots = [tempfile.gettempdir(), "/dev", "/proc", "/sys", os.path.join(home, ".cache"),
             os.path.join(home, ".triton")]
    roots += [os.environ[v] for v in _CACHE_VARS if os.environ.get(v)]
    found = {os.path.abspath(r) for r in roots} | {os.path.realpath(r) for r in roots}
    return sorted(r for r in found if r != os.sep)


def kernel_path(path: str) -> str:
    """``os.path.realpath`` with the real functions: where the kernel would put a write."""
    parts, result, hops = [c for c in os.path.abspath(path).split(os.sep) if c], os.sep, 0
    while parts:
        name = parts.pop(0)
        if name in (".", ".."):
            result = os.path.dirname(result) if name == ".." else result
            continue
        candidate = os.path.join(result, name)
        try:
            st = real.lstat(candidate)
        except OSError:
            return os.path.normpath(os.path.join(candidate, *parts))
        if stat.S_ISLNK(st.st_mode) and hops < 40:
            hops += 1
            target = real.readlink(candidate)
            parts = [c for c in target.split(os.sep) if c] + parts
            result = os.sep if target.startswith(os.sep) else result
            continue
        result = os.path.normpath(candidate)
    return result


def under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def lstat(path: str):
    try:
        return real.lstat(path)
    except OSError:
        return None


def isdir(path: str) -> bool:
    try:
        return stat.S_ISDIR(real.stat(path).st_mode)
    except OSError:
        return False


def error(code: int, name: Any) -> OSError:
    return OSError(code, os.strerror(code), name)


def makedirs(path: str) -> None:
    if isdir(path):
        return
    makedirs(os.path.dirname(path))
    try:
        real.mkdir(path)
    except FileExistsError:
        if not isdir(path):
            raise


def copy(src: str, dst: str) -> None:
    if isdir(src):
        real.mkdir(dst)
        return
    with real.open(src, "rb") as fin, real.open(dst, "wb") as fout:
        while chunk := fin.read(1 << 20):
            fout.write(chunk)
    st = real.stat(src)
    real.chmod(dst, stat.S_IMODE(st.st_mode))
    real.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))


def remove(path: str) -> None:
    st = real.lstat(path)
    if stat.S_ISDIR(st.st_mode):
        for name in real.listdir(path):
            remove(os.path.join(path, name))
        real.rmdir(path)
    else:
        real.unlink(path)


def move(src: str, dst: str) -> None:
    try:
        real.replace(src, dst)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        copy_tree(src, dst)
        remove(src)


def copy_tree(src: str, dst: str) -> None:
    st = real.lstat(src)
    if stat.S_ISLNK(st.st_mode):
        real.symlink(real.readlink(src), dst)
    elif stat.S_ISDIR(st.st_mode):
        copy(src, dst)
        for name in real.listdir(src):
            copy_tree(os.path.join(src, name), os.path.join(dst, name))
    else:
        copy(src, dst)


def path_of(path: Any, dir_fd: Any = None) -> str | None:
    """The absolute path an os call names; None where it names a file descriptor or a dir_fd this
    process cannot name (no /proc)."""
    if path is None or isinstance(path, int):
        return None
    try:
        p = os.fsdecode(os.fspath(path))
    except TypeError:
        return None
    if not p:
        return None
    if isinstance(dir_fd, int) and dir_fd >= 0 and not os.path.isabs(p):
        try:
            p = os.path.join(real.readlink(f"/proc/self/fd/{dir_fd}"), p)
        except OSError:
            return None
    return os.path.abspath(p)


def call_as(call: Callable, name: Any, *args: Any, **kwargs: Any) -> Any:
    """``call(*args, **kwargs)``; an OSError about ``args[0]`` names ``name`` (the script's path) instead."""
    try:
        return call(*args, **kwargs)
    except OSError as exc:
        if exc.filename == args[0]:
            exc.filename = name
        raise
