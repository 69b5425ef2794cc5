"""Per-file result cache for ``amplint check``.

Layout (under the project root unless ``--cache-dir`` says otherwise)::

    .amplint_cache/
        .gitignore            "*": the cache never shows up in ``git status``
        CACHEDIR.TAG          backup tools skip it
        <version>/            one folder per amplint build; other versions' folders are deleted
            <sha256>.json     one small entry per (text, filename, settings)

The key is ``sha256(text, filename, amplint version, settings fingerprint)``, so an edit, a
rename, a setting or an upgrade all miss. Entries are written to a temporary file and renamed
into place, so concurrent runs (pre-commit in parallel, two terminals) never see half an entry;
a corrupt or unreadable entry is a miss. Entries unused for 30 days are pruned (at most once a
day, by :meth:`Cache.prune`), and so are folders of other versions.

The version folder also hashes the size and mtime of amplint's own modules, so an editable
install whose rules change never serves stale results.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from functools import lru_cache
from pathlib import Path

from amplint.model import FileError, FileResult, Finding

CACHE_DIR_NAME = ".amplint_cache"
MAX_AGE_S = 30 * 24 * 3600
TOUCH_AFTER_S = 24 * 3600  # refresh an entry's mtime ("last used") at most daily
PRUNE_EVERY_S = 24 * 3600
FORMAT = 1
_PRUNE_MARKER = ".last-prune"
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by amplint.\n"


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

    def _entry(self, key: str) -> Path:
        return self.dir / f"{key}.json"

    # -- read
    def get(self, text: str, filename: str, settings) -> FileResult | None:
        path = self._entry(self.key(text, filename, settings))
        try:
            with open(path, "rb") as handle:
                mtime = os.fstat(handle.fileno()).st_mtime
                data = json.loads(handle.read())
            result = FileResult(
                filename=filename,
                findings=[Finding.from_dict(item) for item in data["findings"]],
                errors=[FileError(**item) for item in data["errors"]],
                skipped=bool(data["skipped"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
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
    def put(self, text: str, filename: str, settings, result: FileResult) -> None:
        if result.changed:
            return  # results of a fix run describe another text
        data = json.dumps(
            {
                "findings": [finding.to_dict() for finding in result.findings],
                "errors": [{"filename": e.filename, "message": e.message, "internal": e.internal} for e in result.errors],
                "skipped": result.skipped,
            },
            separators=(",", ":"),
        ).encode()
        target = self._entry(self.key(text, filename, settings))
        try:
            self._write(target, data)
        except FileNotFoundError:
            try:
                self.ensure()
                self._write(target, data)
            except OSError:
                pass
        except OSError:
            pass  # a read-only or full disk must never fail the lint

    def _write(self, target: Path, data: bytes) -> None:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.dir)
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
        """Create the cache folder with its ``.gitignore`` and ``CACHEDIR.TAG``."""
        self.dir.mkdir(parents=True, exist_ok=True)
        for name, content in ((".gitignore", "# Automatically created by amplint.\n*\n"), ("CACHEDIR.TAG", _TAG)):
            path = self.root / name
            if not path.exists():
                try:
                    path.write_text(content)
                except OSError:
                    pass

    # -- cleaning
    def prune(self, force: bool = False, now: float | None = None) -> int:
        """Delete other versions' folders and entries unused for 30 days; returns entries removed.

        Runs at most once a day unless ``force``.
        """
        now = time.time() if now is None else now
        marker = self.dir / _PRUNE_MARKER
        if not force:
            try:
                if now - marker.stat().st_mtime < PRUNE_EVERY_S:
                    return 0
            except OSError:
                pass
        if not self.root.is_dir():
            return 0
        removed = 0
        try:
            siblings = list(os.scandir(self.root))
        except OSError:
            return 0
        for entry in siblings:
            if entry.is_dir(follow_symlinks=False) and entry.name != self.dir.name and not entry.name.startswith("."):
                shutil.rmtree(entry.path, ignore_errors=True)
        try:
            entries = list(os.scandir(self.dir))
        except OSError:
            return removed
        for entry in entries:
            try:
                age = now - entry.stat(follow_symlinks=False).st_mtime
            except OSError:
                continue
            stale_tmp = entry.name.startswith(".tmp-") and age > 3600
            if stale_tmp or (entry.name.endswith(".json") and age > MAX_AGE_S):
                try:
                    os.unlink(entry.path)
                    removed += 1
                except OSError:
                    pass
        try:
            marker.touch()
            os.utime(marker, (now, now))
        except OSError:
            pass
        return removed


def default_cache_dir(project_root: Path) -> Path:
    env = os.environ.get("AMPLINT_CACHE_DIR")
    return Path(env) if env else project_root / CACHE_DIR_NAME
