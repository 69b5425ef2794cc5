"""The standard library's file functions, pointed at the run's :class:`Overlay` while it is active.

* opening: ``builtins.open`` and ``io.open`` (one function under two names: patching one leaves the
  other), ``os.open``; ``pathlib``'s open, read and write methods, ``tempfile``, ``numpy.save``,
  ``logging.FileHandler`` and fsspec's local files go through them. A write-mode open of an
  overlaid path opens its shadow, and the file object keeps the script's name for it;
* reading metadata and folders: ``os.stat``, ``lstat``, ``access``, ``readlink``, ``listxattr``,
  ``getxattr``, ``listdir``, ``scandir``, ``chdir`` (``os.path.exists``/``isdir``/``getsize``...,
  ``os.walk``, ``glob`` and ``pathlib`` call these);
* changing the file system: ``os.mkdir``, ``remove``, ``unlink``, ``rmdir``, ``rename``,
  ``replace``, ``link``, ``symlink``, ``chmod``, ``chown``, ``lchown``, ``utime``, ``truncate``,
  ``setxattr``, ``removexattr`` and ``shutil.rmtree`` (``os.makedirs``, ``shutil.move``,
  ``copy``, ``copy2``, ``copyfile``, ``copytree`` and ``pathlib`` call these).

Bytecode caching is off during the run: the import system writes ``__pycache__`` past ``os``.
A call that names a file descriptor, or a path relative to a ``dir_fd`` this process cannot name
(no ``/proc``), runs unchanged, and ``write_guard`` refuses it if it changes a protected path.
"""

from __future__ import annotations

import builtins
import errno
import io
import os
import shutil
import sys
from typing import Any, Callable

import amplint.runtime.fs_listing as fs_listing
from .overlay import Overlay
from .realfs import call_as, error, path_of

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_READERS = {"stat": True, "lstat": False, "access": True, "readlink": False, "listxattr": True, "getxattr": True}
_IN_PLACE = ("chmod", "chown", "lchown", "utime", "truncate", "setxattr", "removexattr")  # content kept


def install(patcher: Any, ov: Overlay) -> None:
    before = dict(vars(os))
    patcher.on_undo(lambda: setattr(ov, "active", False))
    patcher.set(sys, "dont_write_bytecode", True)
    opener = _open(ov, builtins.open)
    patcher.set(builtins, "open", opener)
    patcher.set(io, "open", opener)
    patcher.wrap(os, "open", lambda original: _os_open(ov, original))
    for name, follows in _READERS.items():
        if hasattr(os, name):
            patcher.wrap(os, name, lambda original, f=follows: _reader(ov, original, f))
    for name in _IN_PLACE:
        if hasattr(os, name):
            patcher.wrap(os, name, lambda original: _in_place(ov, original))
    patcher.wrap(os, "listdir", lambda original: fs_listing.listdir(ov, original))
    patcher.wrap(os, "scandir", lambda original: fs_listing.scandir(ov, original))
    patcher.wrap(os, "chdir", lambda original: _chdir(ov, original))
    for name, change in (("mkdir", ov.mkdir), ("remove", ov.remove), ("unlink", ov.remove), ("rmdir", ov.rmdir)):
        patcher.wrap(os, name, lambda original, c=change: _one_path(ov, original, c))
    for name, change in (("rename", ov.move), ("replace", ov.move), ("link", ov.link)):
        if hasattr(os, name):
            patcher.wrap(os, name, lambda original, c=change: _two_paths(ov, original, c))
    patcher.wrap(os, "symlink", lambda original: _symlink(ov, original))
    patcher.wrap(shutil, "rmtree", lambda original: _rmtree(ov, original))
    _patch_py310_pathlib(patcher, before)
    ov.active = True


def _without(kwargs: dict, *names: str) -> dict:
    return {k: v for k, v in kwargs.items() if k not in names}


def _open(ov: Overlay, original: Callable) -> Callable:
    def open(file, mode="r", *args, **kwargs):
        p = path_of(file) if ov.active else None
        if p is None:
            return original(file, mode, *args, **kwargs)
        if any(c in mode for c in "wax+"):
            if "x" in mode and ov.exists(p, follow=False):
                raise error(errno.EEXIST, file)
            phys = call_as(ov.write, file, p, keep="a" in mode or "r" in mode)
        else:
            phys = call_as(ov.read, file, p)
        if phys == p:
            return original(file, mode, *args, **kwargs)
        f = call_as(original, file, phys, mode, *args, **kwargs)
        raw = getattr(getattr(f, "buffer", f), "raw", getattr(f, "buffer", f))
        try:
            raw.name = os.fspath(file)  # the script's name for it: f.name reopens the same view
        except (AttributeError, TypeError):
            pass
        return f

    return open


def _os_open(ov: Overlay, original: Callable) -> Callable:
    def open(path, flags, mode=0o777, *, dir_fd=None):
        p = path_of(path, dir_fd) if ov.active else None
        if p is None:
            return original(path, flags, mode, dir_fd=dir_fd)
        if flags & _WRITE_FLAGS:
            if flags & os.O_CREAT and flags & os.O_EXCL and ov.exists(p, follow=False):
                raise error(errno.EEXIST, path)
            phys = call_as(ov.write, path, p, keep=not flags & os.O_TRUNC)
        else:
            phys = call_as(ov.read, path, p)
        if phys == p:
            return original(path, flags, mode, dir_fd=dir_fd)
        return call_as(original, path, phys, flags, mode)

    return open


def _reader(ov: Overlay, original: Callable, follows: bool) -> Callable:
    def read(path, *args, **kwargs):
        p = path_of(path, kwargs.get("dir_fd")) if ov.active else None
        if p is None:
            return original(path, *args, **kwargs)
        phys = call_as(ov.read, path, p, follow=follows and kwargs.get("follow_symlinks", True))
        if phys == p:
            return original(path, *args, **kwargs)
        return call_as(original, path, phys, *args, **_without(kwargs, "dir_fd"))

    return read


def _in_place(ov: Overlay, original: Callable) -> Callable:
    def change(path, *args, **kwargs):
        p = path_of(path, kwargs.get("dir_fd")) if ov.active else None
        phys = p if p is None else call_as(ov.write, path, p, keep=True, count=False)
        if phys == p:
            return original(path, *args, **kwargs)
        return call_as(original, path, phys, *args, **_without(kwargs, "dir_fd"))

    return change


def _one_path(ov: Overlay, original: Callable, change: Callable) -> Callable:
    def one(path, *args, **kwargs):
        p = path_of(path, kwargs.get("dir_fd")) if ov.active else None
        if p is None or not ov.overlaid(ov.logical(p)):
            return original(path, *args, **kwargs)
        return call_as(change, path, p, *args, **_without(kwargs, "dir_fd"))

    return one


def _two_paths(ov: Overlay, original: Callable, change: Callable) -> Callable:
    def two(src, dst, **kwargs):
        a = path_of(src, kwargs.get("src_dir_fd")) if ov.active else None
        b = path_of(dst, kwargs.get("dst_dir_fd")) if ov.active else None
        if a is None or b is None or not (ov.overlaid(ov.logical(a)) or ov.overlaid(ov.logical(b))):
            return original(src, dst, **kwargs)
        try:
            return change(a, b)
        except OSError as exc:
            exc.filename = {a: src, b: dst}.get(exc.filename, exc.filename)
            raise

    return two


def _symlink(ov: Overlay, original: Callable) -> Callable:
    def symlink(src, dst, target_is_directory=False, **kwargs):
        p = path_of(dst, kwargs.get("dir_fd")) if ov.active else None
        if p is None or not ov.overlaid(ov.logical(p)):
            return original(src, dst, target_is_directory, **kwargs)
        try:
            return ov.symlink(os.fsdecode(os.fspath(src)), p)
        except OSError as exc:
            exc.filename = dst if exc.filename == p else exc.filename
            raise

    return symlink


def _chdir(ov: Overlay, original: Callable) -> Callable:
    def chdir(path):
        p = path_of(path) if ov.active else None
        phys = p if p is None else call_as(ov.workdir, path, p)
        return original(path) if phys == p else call_as(original, path, phys)

    return chdir


def _rmtree(ov: Overlay, original: Callable) -> Callable:
    def rmtree(path, *args, **kwargs):
        p = path_of(path, kwargs.get("dir_fd")) if ov.active else None
        if p is None or not ov.overlaid(ov.logical(p)):
            return original(path, *args, **kwargs)
        try:
            call_as(ov.rmtree, path, p)
        except OSError:
            if not (args[0] if args else kwargs.get("ignore_errors", False)):
                raise

    return rmtree


def _patch_py310_pathlib(patcher: Any, before: dict) -> None:
    # Python 3.10's pathlib bound the os functions at import time, in its accessor
    import pathlib

    accessor = getattr(pathlib, "_NormalAccessor", None)
    for name, value in list(vars(accessor).items()) if accessor is not None else []:
        if before.get(name) is value and getattr(os, name) is not value:
            patcher.set(accessor, name, staticmethod(getattr(os, name)))
