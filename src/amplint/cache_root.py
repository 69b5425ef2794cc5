"""Whether a folder may be amplint's cache: the cache folder is often a path the user typed, so
it is handled as someone else's folder until amplint's ``CACHEDIR.TAG`` says otherwise."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from amplint.overwrite_guard import input_inside

_TAG_NAME = "CACHEDIR.TAG"
_TAG_SIGNATURE = "Signature: 8a477f597d28d172789f06886806bc55"
_TAG = f"{_TAG_SIGNATURE}\n# This file is a cache directory tag created by amplint.\n"


class CacheDirError(Exception):
    """The cache folder is not one amplint may write to or prune; the message says why."""


def is_amplint_cache(root: Path) -> bool:
    """``root`` holds amplint's ``CACHEDIR.TAG`` (a regular file, not a link)."""
    tag = root / _TAG_NAME
    try:
        if tag.is_symlink() or not tag.is_file():
            return False
        head = tag.read_text(encoding="utf-8", errors="replace")[:512]
    except OSError:
        return False
    return head.startswith(_TAG_SIGNATURE) and "amplint" in head


def check_cache_root(given: Path, *, project_root: Path, linted: Iterable[Path]) -> None:
    """Raise :class:`CacheDirError` unless ``given`` is safe to use as amplint's cache folder.

    Safe means: not a symbolic link, not a file, not the project root, the home folder, the
    file-system root or a folder that holds a linted path, and either missing, empty or already
    an amplint cache.
    """
    if given.is_symlink():
        raise CacheDirError(
            f"cache directory {given} is a symbolic link; amplint does not follow it "
            "(remove the link, or pass --cache-dir DIR or --no-cache)"
        )
    if given.exists() and not given.is_dir():
        raise CacheDirError(f"cache directory {given} exists and is not a directory")
    resolved = given.resolve()
    reserved = {
        Path(resolved.anchor): "the file-system root",
        project_root.resolve(): "the project root",
    }
    try:
        reserved.setdefault(Path.home().resolve(), "your home directory")
    except (RuntimeError, KeyError, OSError):
        pass
    if resolved in reserved:
        raise CacheDirError(f"cache directory {given} is {reserved[resolved]}; choose a folder of its own")
    inside = input_inside(resolved, linted)
    if inside is not None:
        raise CacheDirError(
            f"cache directory {given} contains the linted path {Path(inside).resolve()}; choose a folder of its own"
        )
    if resolved.is_dir() and not is_amplint_cache(resolved):
        try:
            empty = _is_empty(resolved)
        except OSError as exc:
            raise CacheDirError(f"cache directory {given} cannot be read ({exc.strerror or exc})") from None
        if not empty:
            raise CacheDirError(
                f"cache directory {given} is not empty and is not an amplint cache; "
                "choose a new or empty folder"
            )


def _is_empty(folder: Path) -> bool:
    with os.scandir(folder) as entries:
        return next(entries, None) is None
