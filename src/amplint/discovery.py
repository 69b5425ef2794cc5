"""Which files to lint: the paths given, default and configured excludes, and ``.gitignore``.

A small gitignore matcher (no runtime dependency): the ``.gitignore`` files from the git root
down to each directory walked, plus ``.git/info/exclude``. Exclude patterns use the same
syntax, relative to the configuration root. A file named explicitly is always linted.
"""

from __future__ import annotations

import errno
import fnmatch
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

DEFAULT_EXCLUDE = (
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".hg",
    ".mypy_cache",
    ".nox",
    ".pants.d",
    ".pytest_cache",
    ".pytype",
    ".ruff_cache",
    ".amplint_cache",
    ".svn",
    ".tox",
    ".venv",
    "__pypackages__",
    "__pycache__",
    "_build",
    "buck-out",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    "venv",
)

PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")


from amplint.gitignore import (  # noqa: F401  (re-exported: discovery is where users look)
    IgnoreFile,
    Pattern,
    PatternError,
    _ignore_file_at,
    _is_ignored,
    check_pattern,
    find_git_root,
    parse_pattern,
)

# --------------------------------------------------------------------------- discovery


@dataclass
class Discovery:
    """The files a run lints, and what it was given that it cannot lint."""

    files: list[Path] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # paths given that do not exist
    empty: list[str] = field(default_factory=list)  # directories given that hold no Python file
    errors: list[str] = field(default_factory=list)  # one line each: what could not be read, and why


class Excluder:
    """Exclude patterns (gitignore syntax): a name matches at any depth, a path from ``root``."""

    def __init__(self, patterns: Sequence[str], root: Path) -> None:
        self.root = root
        self._patterns = tuple(patterns)

    @cached_property
    def ignore(self) -> IgnoreFile:
        # Compiled on first use: linting files named on the command line never needs them.
        return IgnoreFile.from_lines(self.root, self._patterns)

    @cached_property
    def _root_prefix(self) -> str:
        return os.path.join(str(self.root), "")

    def excluded(self, path: Path | str, is_dir: bool) -> bool:
        if not self.ignore.patterns:
            return False
        text = str(path)
        name = os.path.basename(text)
        if text.startswith(self._root_prefix):  # as path.relative_to(root), without pathlib's parsing
            rel = text[len(self._root_prefix):].replace(os.sep, "/")
        else:
            rel = name  # outside the root: only name patterns can apply
        if self.ignore.match(rel, is_dir):
            return True
        return bool(self.ignore.match(name, is_dir))


def _gitignore_stack(directory: Path, git_root: Path | None) -> list[IgnoreFile]:
    """Ignore files that apply to ``directory`` itself: from the git root down to it."""
    if git_root is None:
        return []
    stack: list[IgnoreFile] = []
    info = _ignore_file_at(git_root / ".git" / "info", "exclude")
    if info is not None:
        stack.append(IgnoreFile(git_root, info.patterns))
    try:
        rel_parts = directory.relative_to(git_root).parts
    except ValueError:
        return stack
    current = git_root
    for part in ("", *rel_parts):
        current = current / part if part else current
        found = _ignore_file_at(current)
        if found is not None:
            stack.append(found)
    return stack


class Includer:
    """Which files a directory walk picks: ``*.py``, ``*.pyi``, ``*.ipynb`` and the ``extend-include`` globs.

    A glob without a ``/`` matches a file's name at any depth, one with a ``/`` its path from ``root``.
    """

    def __init__(self, globs: Sequence[str] = (), root: Path | None = None) -> None:
        self.root = root
        self.names = tuple(g for g in globs if "/" not in g)
        self.paths = tuple(g.lstrip("/") for g in globs if "/" in g)

    def __call__(self, path: Path | str) -> bool:
        name = os.path.basename(path)
        if name.endswith(PYTHON_SUFFIXES):
            return True
        if any(fnmatch.fnmatchcase(name, glob) for glob in self.names):
            return True
        if self.paths and self.root is not None:
            try:
                rel = Path(path).relative_to(self.root).as_posix()
            except ValueError:
                return False
            return any(fnmatch.fnmatchcase(rel, glob) for glob in self.paths)
        return False


def _walk(
    directory: str, stack: list[IgnoreFile], excluder: Excluder, use_gitignore: bool, out: list[tuple[str, bool]],
    errors: list[tuple[Path, OSError]], included: Includer,
) -> None:
    """The files under ``directory`` as (path, is a symbolic link); strings, not ``Path`` objects,
    which cost more to build than the rest of a walk."""
    try:
        with os.scandir(directory) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError as exc:
        errors.append((Path(directory), exc))
        return
    for entry in entries:
        path = entry.path
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = not is_dir and entry.is_file()
        except OSError as exc:  # e.g. a symlink loop
            if included(path):
                errors.append((Path(path), exc))
            continue
        if not is_dir and not (is_file and included(path)):
            continue
        if excluder.excluded(path, is_dir):
            continue
        if use_gitignore and stack and _is_ignored(stack, Path(path), is_dir):
            continue
        if is_dir:
            child_stack = stack
            if use_gitignore:
                found = _ignore_file_at(Path(path))
                if found is not None:
                    child_stack = [*stack, found]
            _walk(path, child_stack, excluder, use_gitignore, out, errors, included)
        else:
            out.append((path, entry.is_symlink()))


def discover(
    paths: Sequence[str],
    exclude: Sequence[str] = DEFAULT_EXCLUDE,
    extend_exclude: Sequence[str] = (),
    root: Path | None = None,
    respect_gitignore: bool = True,
    force_exclude: bool = False,
    extend_include: Sequence[str] = (),
) -> Discovery:
    """Python files (and ``extend_include`` matches) under ``paths``, in a stable order, without duplicates."""
    root = (root or Path.cwd()).resolve()
    included = Includer(extend_include, root)
    excluder = Excluder([*exclude, *extend_exclude], root)
    result = Discovery()
    seen: set[str] = set()
    for given in paths:
        path = Path(given)
        if not path.exists():
            message = f"{given}: {_broken_link_reason(path)}"
            if os.path.lexists(path) and message not in result.errors:
                result.errors.append(message)
            elif not os.path.lexists(path):
                result.missing.append(given)
            continue
        if not path.is_dir():
            # Named explicitly: always linted, whatever its name or the excludes, unless
            # ``force_exclude`` (pre-commit names every file, the excludes must still apply).
            key = path.resolve()
            if force_exclude and _force_excluded(key, excluder, root):
                continue
            key = str(key)
            if key not in seen:
                seen.add(key)
                result.files.append(path)
            continue
        absolute = path.resolve()
        git_root = find_git_root(absolute) if respect_gitignore else None
        stack = _gitignore_stack(absolute, git_root)
        found: list[tuple[str, bool]] = []
        unreadable: list[tuple[Path, OSError]] = []
        _walk(str(absolute), stack, excluder, respect_gitignore, found, unreadable, included)
        for where, exc in unreadable:
            kind = "directory" if where == absolute or where.is_dir() else "file"
            message = f"{_as_given(where, absolute, path)}: cannot read {kind} ({exc.strerror or exc})"
            if message not in result.errors:
                result.errors.append(message)
        if not found and not unreadable:
            result.empty.append(given)
        under = os.path.join(str(absolute), "")
        given = str(path)
        for file, is_link in found:
            # Two names of one file (a symlink beside its target) are linted, and fixed, once.
            key = os.path.realpath(file) if is_link else file
            if key in seen:
                continue
            seen.add(key)
            # Spelled from the directory as the user gave it (keeps relative paths relative).
            result.files.append(Path(given, file[len(under):]))
    return result


def _broken_link_reason(path: Path) -> str:
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"cannot read file ({exc.strerror})"
    return "broken symbolic link"


def _force_excluded(path: Path, excluder: Excluder, root: Path) -> bool:
    if excluder.excluded(path, False):
        return True
    try:
        parents = path.parent.relative_to(root).parts
    except ValueError:
        return any(excluder.excluded(parent, True) for parent in path.parents)
    current = root
    for part in parents:
        current = current / part
        if excluder.excluded(current, True):
            return True
    return False


def _as_given(file: Path, absolute_dir: Path, given_dir: Path) -> Path:
    """``file`` spelled from the directory as the user gave it (keeps relative paths relative)."""
    return given_dir / file.relative_to(absolute_dir)
