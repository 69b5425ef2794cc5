"""Per-file result cache for ``amplint check``.

Layout (under the project root unless ``--cache-dir`` says otherwise)::

    .amplint_cache/
        .gitignore            "*": written only when amplint created the folder itself
        CACHEDIR.TAG          backup tools skip it; also how amplint recognises its own cache
        <version>/            one folder per amplint build
            .amplint-cache    marks the folder as amplint's; only marked folders are pruned
            <sha256>.json     one small entry per (text, filename, settings)
            <sha256>.summary  one module summary per text (the project pass)

The key is ``sha256(text, filename, amplint version, settings fingerprint)``, so an edit, a
rename, a setting or an upgrade all miss. An entry whose lint asked the project about the file's
imports records the questions and a digest of the answers, and is used only while the project
gives the same answers (:mod:`amplint.project.deferred`): an edit to ``utils.py`` misses for
``train.py``, whose lint summarised it, and not for the files whose lint never asked. Entries
are written to a temporary file and renamed into place, so concurrent runs (pre-commit in
parallel, two terminals) never see half an entry; a corrupt or unreadable entry is a miss.
Entries unused for 30 days are pruned (at most once a day, by :meth:`Cache.prune`), and so are
other versions' folders.

The cache folder is often a path the user typed, so it is handled as someone else's folder:
:func:`~amplint.cache_root.check_cache_root` refuses a symbolic link, the project root, the home folder, a folder
holding a linted path and any non-empty folder that is not an amplint cache; pruning never
recurses and deletes only files whose names amplint itself writes, inside version folders that
carry amplint's marker, never through a symbolic link.

The version folder also hashes the size and mtime of amplint's own modules, so an editable
install whose rules change never serves stale results.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
from functools import lru_cache
from pathlib import Path

from amplint.cache_entries import valid_entry
from amplint.cache_root import (  # noqa: F401  (re-exported: the cache is where callers look for them)
    _TAG,
    _TAG_NAME,
    CacheDirError,
    _is_empty,
    check_cache_root,
    is_amplint_cache,
)
from amplint.model import FileError, FileResult, Finding

CACHE_DIR_NAME = ".amplint_cache"
MAX_AGE_S = 30 * 24 * 3600
TOUCH_AFTER_S = 24 * 3600  # refresh an entry's mtime ("last used") at most daily
PRUNE_EVERY_S = 24 * 3600
FORMAT = 3  # entries carry their key and what their lint asked of the project, and are validated on read
_PRUNE_MARKER = ".last-prune"
_VERSION_MARKER = ".amplint-cache"
# names amplint writes inside a version folder: nothing else there is ever deleted
_ENTRY_NAME = re.compile(r"[0-9a-f]{64}\.(?:json|summary)")
_TMP_PREFIX = ".tmp-"
_VERSION_NAME = re.compile(r"\d+\.\d+[0-9A-Za-z.+!-]*-[0-9a-f]{12}")


@lru_cache(maxsize=1)
def cache_version() -> str:
    """amplint's version plus a digest of its own modules (catches editable-install edits)."""
    import amplint

    package = Path(amplint.__file__).parent
    digest = hashlib.sha256(f"{FORMAT}".encode())
    for root, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "runtime"))
        for name in sorted(files):
            if name.endswith(".py"):
                try:
                    st = os.stat(os.path.join(root, name))
                except OSError:
                    continue
                digest.update(f"{os.path.relpath(os.path.join(root, name), package)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return f"{amplint.__version__}-{digest.hexdigest()[:12]}"


@lru_cache(maxsize=16)
def _fingerprint(settings) -> str:
    """``settings.fingerprint()``, computed once per distinct (frozen, hashable) settings value."""
    return settings.fingerprint()


class Cache:
    def __init__(self, directory: os.PathLike | str) -> None:
        self.root = Path(directory)
        self.dir = self.root / cache_version()

    # -- keys
    def _fingerprint(self, settings) -> str:
        return _fingerprint(settings)

    def key(self, text: str, filename: str, settings) -> str:
        digest = hashlib.sha256()
        for part in (text, filename, cache_version(), self._fingerprint(settings)):
            digest.update(part.encode("utf-8", "surrogatepass"))
            digest.update(b"\0")
        return digest.hexdigest()

    def _entry(self, key: str, suffix: str = "json") -> Path:
        return self.dir / f"{key}.{suffix}"

    # -- read
    def get(self, text: str, filename: str, settings, project=None) -> FileResult | None:
        """The stored result, or ``None`` on a miss; an entry that is not exactly what
        :meth:`put` writes (truncated, corrupt, written by another version) is a miss too, and
        so is one whose lint read another state of the project than ``project`` (a
        :class:`~amplint.project.context.ProjectContext`, a deferred one, or ``None``) shows."""
        key = self.key(text, filename, settings)
        path = self._entry(key)
        try:
            with open(path, "rb") as handle:
                mtime = os.fstat(handle.fileno()).st_mtime
                data = json.loads(handle.read())
            if not valid_entry(data, key):
                return None
            if data["project"] is not None:
                from amplint.project.deferred import entry_matches

                if not entry_matches(data["project"], project):
                    return None
            result = FileResult(
                filename=filename,
                findings=[Finding.from_dict(item) for item in data["findings"]],
                errors=[FileError(**item) for item in data["errors"]],
                skipped=data["skipped"],
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return None
        if result.findings:
            result.source = text  # reporters show the source line
        now = time.time()
        if now - mtime > TOUCH_AFTER_S:
            try:
                os.utime(path)
            except OSError:
                pass
        return result

    # -- write
    def put(self, text: str, filename: str, settings, result: FileResult, project=None) -> None:
        """``project``: what the lint was given of the project; the entry records what of it
        the lint asked, with a digest of the answers."""
        if result.changed:
            return  # results of a fix run describe another text
        from amplint.project.deferred import entry_record

        key = self.key(text, filename, settings)
        data = json.dumps(
            {
                "key": key,
                "project": entry_record(project),
                "findings": [finding.to_dict() for finding in result.findings],
                "errors": [{"filename": e.filename, "message": e.message, "internal": e.internal} for e in result.errors],
                "skipped": result.skipped,
            },
            separators=(",", ":"),
        ).encode()
        self._store(key, data)

    # -- module summaries (the project pass), by content alone (and the definitions asked for)
    def summary_key(self, text: str, only: frozenset[str] | None = None) -> str:
        digest = hashlib.sha256(b"module-summary\0")
        parts = (text, cache_version()) if only is None else (text, cache_version(), "\0".join(sorted(only)))
        for part in parts:
            digest.update(part.encode("utf-8", "surrogatepass"))
            digest.update(b"\0")
        return digest.hexdigest()

    def get_summary(self, text: str, only: frozenset[str] | None = None):
        """The stored :class:`~amplint.project.records.ModuleSummary` of ``text`` (narrowed to the
        definitions ``only``, when given), or ``None``."""
        from amplint.cache_entries import summary_from_entry

        key = self.summary_key(text, only)
        path = self._entry(key, "summary")
        try:
            with open(path, "rb") as handle:
                mtime = os.fstat(handle.fileno()).st_mtime
                summary = summary_from_entry(json.loads(handle.read()), key)
        except (OSError, ValueError, RecursionError):
            return None
        if summary is not None and time.time() - mtime > TOUCH_AFTER_S:
            try:
                os.utime(path)  # still in use: not pruned
            except OSError:
                pass
        return summary

    def put_summary(self, text: str, summary, only: frozenset[str] | None = None) -> None:
        key = self.summary_key(text, only)
        data = json.dumps({"key": key, "summary": summary.to_dict()}, separators=(",", ":")).encode()
        self._store(key, data, "summary")

    def _store(self, key: str, data: bytes, suffix: str = "json") -> None:
        target = self._entry(key, suffix)
        try:
            self._write(target, data)
        except FileNotFoundError:
            try:
                self.ensure()
                self._write(target, data)
            except (OSError, CacheDirError):
                pass
        except (OSError, CacheDirError):
            pass  # a read-only or full disk, or a folder amplint will not use, must never fail the lint

    def _write(self, target: Path, data: bytes) -> None:
        if self.dir.is_symlink():
            raise CacheDirError(f"cache directory {self.dir} is a symbolic link")
        fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, dir=self.dir)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def ensure(self) -> None:
        """Create the cache and version folders, with ``CACHEDIR.TAG`` and the version marker.

        ``.gitignore`` is written only into a root folder this call created: a folder the user
        made is theirs, and a ``*`` there would hide their files from git.
        """
        try:
            self.root.mkdir(parents=True)
            created = True
        except FileExistsError:
            created = False
        if self.root.is_symlink() or not self.root.is_dir():
            raise CacheDirError(f"cache directory {self.root} is not a plain directory")
        if created or _is_empty(self.root):
            _write_new(self.root / _TAG_NAME, _TAG)
        if created:
            _write_new(self.root / ".gitignore", "# Automatically created by amplint.\n*\n")
        self.dir.mkdir(exist_ok=True)
        if self.dir.is_symlink() or not self.dir.is_dir():
            raise CacheDirError(f"cache directory {self.dir} is not a plain directory")
        marker = self.dir / _VERSION_MARKER
        if not marker.is_file():
            _write_new(marker, f"amplint cache {self.dir.name}\n")

    # -- cleaning
    def prune(self, force: bool = False, now: float | None = None) -> int:
        """Delete other versions' folders and entries unused for 30 days; returns entries removed.

        Runs at most once a day unless ``force``. Only amplint's own files are deleted: entry and
        temporary files by name, in marked version folders, never through a symbolic link, and a
        folder is removed only once it is empty.
        """
        now = time.time() if now is None else now
        if self.root.is_symlink() or self.dir.is_symlink() or not self.dir.is_dir():
            return 0
        marker = self.dir / _PRUNE_MARKER
        if not force:
            try:
                if now - marker.stat().st_mtime < PRUNE_EVERY_S:
                    return 0
            except OSError:
                pass
        try:
            siblings = list(os.scandir(self.root))
        except OSError:
            return 0
        for entry in siblings:
            if entry.name != self.dir.name and _is_version_folder(entry):
                _empty_version_folder(entry.path, now, max_age=0.0)
                try:
                    os.rmdir(entry.path)
                except OSError:
                    pass  # something amplint did not write is left there, and so the folder
        removed = _empty_version_folder(str(self.dir), now, max_age=MAX_AGE_S)
        try:
            marker.touch()
            os.utime(marker, (now, now))
        except OSError:
            pass
        return removed


def _write_new(path: Path, content: str) -> None:
    """Create ``path`` with ``content`` unless something (even a dangling link) is there."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError:
        return
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(content)


def _is_version_folder(entry: os.DirEntry) -> bool:
    """A real folder named like a version whose marker amplint wrote (``.last-prune`` in 0.1)."""
    if not entry.is_dir(follow_symlinks=False) or not _VERSION_NAME.fullmatch(entry.name):
        return False
    for name in (_VERSION_MARKER, _PRUNE_MARKER):
        try:
            if os.path.isfile(os.path.join(entry.path, name)) and not os.path.islink(os.path.join(entry.path, name)):
                return True
        except OSError:
            continue
    return False


def _empty_version_folder(path: str, now: float, max_age: float) -> int:
    """Unlink amplint's entries older than ``max_age`` (all of them at 0) in one version folder.

    With ``max_age`` 0 the markers go too, so the folder can then be removed with ``rmdir``.
    Stale temporary files (an hour old) always go. Returns the number of entries unlinked.
    """
    try:
        entries = list(os.scandir(path))
    except OSError:
        return 0
    removed = 0
    for entry in entries:
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            age = now - entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if _ENTRY_NAME.fullmatch(entry.name):
            doomed = age > max_age
        elif entry.name.startswith(_TMP_PREFIX):
            doomed = age > 3600 or max_age == 0.0
        else:
            doomed = max_age == 0.0 and entry.name in (_VERSION_MARKER, _PRUNE_MARKER)
        if doomed:
            try:
                os.unlink(entry.path)
            except OSError:
                continue
            if entry.name not in (_VERSION_MARKER, _PRUNE_MARKER):
                removed += 1
    return removed


def default_cache_dir(project_root: Path) -> Path:
    env = os.environ.get("AMPLINT_CACHE_DIR")
    return Path(env) if env else project_root / CACHE_DIR_NAME
