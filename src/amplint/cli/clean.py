"""``amplint clean``: remove amplint's cache folders, and nothing that is not amplint's.

A folder is cleaned only if it carries amplint's ``CACHEDIR.TAG`` (:func:`amplint.cache.is_amplint_cache`)
and is not a symbolic link. In it, version folders are emptied with the cache's own pruning
(only amplint's entry, temporary and marker files, in folders amplint marked), then the tag and
the ``.gitignore`` amplint wrote (when it is exactly amplint's) go, and the folders are removed
with ``rmdir``: a folder still holding anything else stays, and is reported as kept.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from amplint.cache import (
    _TAG,
    _TAG_NAME,
    CACHE_DIR_NAME,
    _empty_version_folder,
    _is_version_folder,
    default_cache_dir,
    is_amplint_cache,
)
from amplint.config import display_path

_GITIGNORE = "# Automatically created by amplint.\n*\n"
# Folders a search for caches never enters: they are not a project's and can be huge.
_SKIP = frozenset({
    ".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".nox", ".mypy_cache", ".ruff_cache",
    "site-packages",
})


@dataclass
class CleanOutcome:
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def clean(paths: list[str], cache_dir: str | None) -> CleanOutcome:
    outcome = CleanOutcome()
    candidates: dict[Path, bool] = {}  # folder -> named by the user (an error if it is not a cache)
    if cache_dir is not None:
        candidates[Path(cache_dir)] = True
    candidates.setdefault(_project_cache(), False)
    for given in paths:
        if not os.path.isdir(given):
            outcome.errors.append(f"{given}: not a directory")
            continue
        for found in _find_caches(Path(given)):
            candidates.setdefault(found, False)
    seen: set[str] = set()
    for folder, named in candidates.items():
        key = os.path.realpath(folder)
        if key in seen or not os.path.lexists(folder):
            continue
        seen.add(key)
        shown = display_path(folder)
        if folder.is_symlink():
            outcome.errors.append(f"{shown}: a symbolic link; amplint does not follow it (nothing removed)")
        elif not folder.is_dir() or not is_amplint_cache(folder):
            if named:
                outcome.errors.append(f"{shown}: not an amplint cache (no CACHEDIR.TAG written by amplint); nothing removed")
        elif _remove_cache(folder):
            outcome.removed.append(shown)
        else:
            outcome.kept.append(shown)
    return outcome


def _project_cache() -> Path:
    """The cache ``amplint check`` run here would use (``AMPLINT_CACHE_DIR`` included)."""
    from amplint.config import ConfigError, find_config
    from amplint.discovery import find_git_root

    try:
        config = find_config(Path.cwd())
    except ConfigError:
        config = None
    root = config.parent if config is not None else (find_git_root(Path.cwd().resolve()) or Path.cwd())
    return default_cache_dir(root)


def _find_caches(top: Path):
    for directory, dirs, _files in os.walk(top):  # os.walk does not follow links into folders
        if CACHE_DIR_NAME in dirs:
            yield Path(directory) / CACHE_DIR_NAME
        dirs[:] = [d for d in dirs if d not in _SKIP and d != CACHE_DIR_NAME]


def _remove_cache(root: Path) -> bool:
    """Empty and remove one amplint cache folder; False when something not amplint's is left in it."""
    now = time.time()
    for entry in _entries(root):
        if _is_version_folder(entry):
            _empty_version_folder(entry.path, now, max_age=0.0)
            try:
                os.rmdir(entry.path)
            except OSError:
                pass
    ours = {_TAG_NAME: _TAG, ".gitignore": _GITIGNORE}
    left = _entries(root)
    # The tag and the ".gitignore" go last, and only when nothing else is left: a folder that keeps
    # someone's files stays a cache amplint recognises, and stays hidden from git.
    if any(entry.name not in ours or not _is_plain_file_with(Path(entry.path), ours[entry.name]) for entry in left):
        return False
    for entry in left:
        try:
            os.unlink(entry.path)
        except OSError:
            return False
    try:
        os.rmdir(root)
    except OSError:
        return False
    return True


def _entries(folder: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as listing:
            return list(listing)
    except OSError:
        return []


def _is_plain_file_with(path: Path, content: str) -> bool:
    try:
        return not path.is_symlink() and path.is_file() and path.read_text(encoding="utf-8", errors="replace") == content
    except OSError:
        return False
