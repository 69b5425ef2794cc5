"""Writing a fixed file back without losing the user's data or the file's identity.

The file that is fixed is the file the user has: a symlink is followed and its target is
written, the link stays a link. The new content goes through a temporary file in the same
directory and one rename, so a reader (or a crash) sees either the old or the new content.
The temporary file first takes on the original's owner, group, mode and extended
attributes. When it cannot (a hard link, whose other names a rename would leave behind; an
owner or attribute only the original may carry), the file is rewritten in place instead.

Right before the file is replaced its content is read again: when it no longer matches
what was linted, someone edited it meanwhile and nothing is written. See docs/reliability.md.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

TEMP_SUFFIX = ".amplint-tmp"


class WriteError(Exception):
    """A one-line reason why fixes were not written (nothing was)."""


class ChangedOnDisk(WriteError):
    """The file no longer holds what was linted: the user's newer edit wins."""


def write_fix(path: Path, original: bytes, fixed: bytes, name: str | None = None) -> None:
    """Replace the content of ``path`` (read as ``original``) with ``fixed``, or raise WriteError."""
    name = name or str(path)
    target = Path(os.path.realpath(path))
    try:
        info = os.stat(target)
    except OSError as exc:
        raise WriteError(f"{name}: cannot write fixes ({exc.strerror or exc})") from None
    if not stat.S_ISREG(info.st_mode):
        raise WriteError(f"{name}: not a regular file, fixes not written")
    if _read_only(target, info.st_mode):
        raise WriteError(f"{name}: file is read-only, fixes not written")
    directory = target.parent
    if _read_only(directory, os.stat(directory).st_mode):
        raise WriteError(f"{name}: directory {_shown(directory, path)} is read-only, fixes not written")
    try:
        if info.st_nlink > 1 or not _replace_keeping_identity(target, info, original, fixed, name):
            _rewrite_in_place(target, original, fixed, name)
    except WriteError:
        raise
    except OSError as exc:
        raise WriteError(f"{name}: cannot write fixes ({exc.strerror or exc})") from None


def _read_only(path: Path, mode: int) -> bool:
    # Honoured even for root, who could write anyway: a file or folder without any write bit
    # was made read-only on purpose.
    return not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(path, os.W_OK)


def _shown(directory: Path, given: Path) -> str:
    parent = os.path.dirname(str(given))
    return parent if parent and Path(parent).resolve() == directory else str(directory)


def _ensure_unchanged(current: bytes, original: bytes, name: str) -> None:
    if current != original:
        raise ChangedOnDisk(f"{name}: changed on disk while it was being fixed; fixes not written, run again")


def _read_all(path: Path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _replace_keeping_identity(target: Path, info: os.stat_result, original: bytes, fixed: bytes, name: str) -> bool:
    """Write a temporary file and rename it over ``target``; False if identity cannot be kept."""
    fd, temp = _open_temporary(target)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(fixed)
            handle.flush()
            if not _copy_identity(handle.fileno(), target, info):
                if temp is not None:
                    os.unlink(temp)
                return False
            # Without it a crash soon after the rename can leave an empty file on some file systems.
            os.fsync(handle.fileno())
            _ensure_unchanged(_read_all(target), original, name)
            if temp is None:
                temp = _give_name(handle.fileno(), target)
        os.replace(temp, target)
    except BaseException:
        if temp is not None:
            try:
                os.unlink(temp)
            except OSError:
                pass
        raise
    return True


def _open_temporary(target: Path) -> tuple[int, str | None]:
    """A new file beside ``target``, unnamed where the system allows (``None`` for its name).

    An unnamed file vanishes with the process if it is killed while writing; it gets a name
    only for the instant between ``linkat`` and ``rename``.
    """
    unnamed = getattr(os, "O_TMPFILE", 0)
    if unnamed and os.path.isdir("/proc/self/fd"):
        try:
            return os.open(target.parent, unnamed | os.O_WRONLY, 0o600), None
        except OSError:
            pass  # a file system without unnamed files
    return tempfile.mkstemp(prefix=f".{target.name}.", suffix=TEMP_SUFFIX, dir=target.parent)


def _give_name(fd: int, target: Path) -> str:
    import secrets

    directory = os.open(target.parent, os.O_RDONLY)
    try:
        while True:
            temp = f".{target.name}.{secrets.token_hex(6)}{TEMP_SUFFIX}"
            try:
                # With a directory fd, os.link calls linkat and honours follow_symlinks (plain
                # link(2) would link the /proc entry itself).
                os.link(f"/proc/self/fd/{fd}", temp, dst_dir_fd=directory, follow_symlinks=True)
                return str(target.parent / temp)
            except FileExistsError:
                continue
    finally:
        os.close(directory)


def _copy_identity(fd: int, target: Path, info: os.stat_result) -> bool:
    own = os.fstat(fd)
    if (own.st_uid, own.st_gid) != (info.st_uid, info.st_gid):
        try:
            os.fchown(fd, info.st_uid, info.st_gid)
        except OSError:
            return False  # only the original may carry this owner: keep the original
    # After chown, which clears set-id bits.
    os.fchmod(fd, stat.S_IMODE(info.st_mode))
    if hasattr(os, "listxattr"):
        try:
            names = os.listxattr(target)
        except OSError:
            names = []
        for attribute in names:
            try:
                os.setxattr(fd, attribute, os.getxattr(target, attribute))
            except OSError:
                return False
    return True


def _rewrite_in_place(target: Path, original: bytes, fixed: bytes, name: str) -> None:
    """Overwrite the file's content through the open file, which keeps every name and attribute."""
    with open(target, "r+b") as handle:
        _ensure_unchanged(handle.read(), original, name)
        handle.seek(0)
        handle.write(fixed)
        handle.truncate()
        handle.flush()
        os.fsync(handle.fileno())
