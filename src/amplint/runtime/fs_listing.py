"""``os.listdir`` and ``os.scandir`` over the overlay: the shadow folder merged with what is still
visible of the real one (``os.walk``, ``glob`` and ``pathlib``'s ``iterdir``/``glob`` call these).

A folder the run has changed nothing in is listed as it is, with the real ``DirEntry``s.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from .overlay import Overlay
from .realfs import call_as, path_of, real


def listdir(ov: Overlay, original: Callable) -> Callable:
    def listdir(path="."):
        p = path_of(path) if ov.active and not isinstance(path, bytes) else None
        if p is None or ov.untouched(p):
            return original(path)
        visible, mine = call_as(ov.listing, path, p)
        return visible + (real.listdir(mine) if mine else [])

    return listdir


def scandir(ov: Overlay, original: Callable) -> Callable:
    def scandir(path="."):
        p = path_of(path) if ov.active and not isinstance(path, bytes) else None
        if p is None or ov.untouched(p):
            return original(path)
        visible, mine = call_as(ov.listing, path, p)
        base, keep, entries = os.fspath(path), set(visible), []
        if keep:
            with real.scandir(ov.follow(ov.logical(p))) as it:
                entries += [_Entry(e, os.path.join(base, e.name)) for e in it if e.name in keep]
        if mine:
            with real.scandir(mine) as it:
                entries += [_Entry(e, os.path.join(base, e.name)) for e in it]
        return _Listing(entries)

    return scandir


class _Entry:
    """A ``DirEntry`` under the name the script listed (a shadow entry's own path is verify's)."""

    __slots__ = ("_entry", "name", "path")

    def __init__(self, entry: os.DirEntry, path: str) -> None:
        self._entry, self.name, self.path = entry, entry.name, path

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return self._entry.is_dir(follow_symlinks=follow_symlinks)

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        return self._entry.is_file(follow_symlinks=follow_symlinks)

    def is_symlink(self) -> bool:
        return self._entry.is_symlink()

    def is_junction(self) -> bool:
        return False

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        return self._entry.stat(follow_symlinks=follow_symlinks)

    def inode(self) -> int:
        return self._entry.inode()

    def __fspath__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f"<DirEntry {self.name!r}>"


class _Listing:
    """What ``os.scandir`` returns: an iterator that is also a context manager."""

    def __init__(self, entries: list[_Entry]) -> None:
        self._it = iter(entries)

    def __iter__(self):
        return self

    def __next__(self) -> _Entry:
        return next(self._it)

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._it = iter(())
