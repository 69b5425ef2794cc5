"""A copy-on-write view of the file system for one verify run: the script's changes stay in ``root``.

Paths the script names are *logical*. A change to one is kept in its *shadow*,
``<root>/<absolute logical path>``, and a deletion is remembered in memory, so the script sees its
own writes, moves and deletions while the files outside stay as they were:

* a path is read from its shadow if there is one, is absent if the script deleted it (or a folder
  above it), and is read where it is otherwise;
* a write, move, deletion or metadata change of an *overlaid* path happens in the shadow; a file
  whose content the change keeps (append, ``r+``, chmod, utime) is copied there first. A path is
  overlaid when it is protected (it resolves, symlinks followed, outside ``root`` and outside the
  scratch roots: the temporary folder, the user's caches, /dev, /proc, /sys) or when the run has
  already shadowed or deleted it;
* a listing merges the shadow folder with what is still visible of the real one.

A path under ``root`` means its logical path, so a shadow path the script gets hold of (its
``os.getcwd()`` after ``os.chdir`` into a folder it made) names the same file. The overlay itself
uses ``realfs``: the patched functions answer for the script's view.
"""

from __future__ import annotations

import errno
import os
import stat

import amplint.runtime.realfs as realfs
from .realfs import error, under


class CannotRedirect(BaseException):
    """A write verify cannot move into its directory; a BaseException so ``except Exception`` in the
    script does not carry on as if it had been written."""


class Overlay:
    def __init__(self, root: str, own: str | None = None) -> None:
        self.root = os.path.abspath(root)
        # verify's own directory (its results) is scratch too, whichever temporary folder made it
        self.scratch = realfs.scratch_roots() + ([os.path.abspath(own)] if own else [])
        self.active = False
        self.files_written: set[str] = set()  # logical paths, for the report's note
        self.refused: list[tuple[str, str, str]] = []  # (path, how, where) of writes verify would not make
        self._hidden: set[str] = set()  # logical paths the script deleted, and everything below them
        realfs.makedirs(self.root)

    # -- naming ----------------------------------------------------------------------------------

    def logical(self, path) -> str:
        p = os.path.abspath(os.fsdecode(os.fspath(path)))
        return (p[len(self.root):] or os.sep) if under(p, self.root) else p

    def shadow(self, logical: str) -> str:
        return self.root + logical if logical != os.sep else self.root

    def protected(self, path: str) -> bool:
        """Whether writing ``path`` for real could change a user's file."""
        real = realfs.kernel_path(path)
        return not (under(real, self.root) or any(under(real, r) for r in self.scratch))

    def hidden(self, logical: str) -> bool:
        p = logical
        while True:
            if p in self._hidden:
                return True
            parent = os.path.dirname(p)
            if parent == p:
                return False
            p = parent

    def overlaid(self, logical: str) -> bool:
        return realfs.lstat(self.shadow(logical)) is not None or self.hidden(logical) or self.protected(logical)

    def follow(self, logical: str) -> str:
        """The logical path a symlink at the last component leads to (shadowed or protected links)."""
        p = logical
        for _ in range(40):
            st = realfs.lstat(self.shadow(p))
            link = self.shadow(p) if st is not None else None
            if st is None and not self.hidden(p) and not any(under(p, r) for r in self.scratch):
                st, link = realfs.lstat(p), p
            if st is None or not stat.S_ISLNK(st.st_mode):
                return p
            p = self.logical(os.path.join(os.path.dirname(p), realfs.real.readlink(link)))
        raise error(errno.ELOOP, logical)

    # -- the script's view -----------------------------------------------------------------------

    def read(self, path, follow: bool = True) -> str:
        """The physical path that holds what the script sees at ``path``."""
        p = self.logical(path)
        p = self.follow(p) if follow else p
        s = self.shadow(p)
        if realfs.lstat(s) is not None:
            return s
        if self.hidden(p):
            raise error(errno.ENOENT, path)
        return p

    def workdir(self, path) -> str:
        """Where ``os.chdir(path)`` goes: the real folder while it is visible (code that bypasses the
        overlay, the import system included, resolves relative paths there), else its shadow."""
        p = self.follow(self.logical(path))
        return p if not self.hidden(p) and realfs.isdir(p) else self.read(p)

    def exists(self, path, follow: bool = True) -> bool:
        try:
            (realfs.real.stat if follow else realfs.real.lstat)(self.read(path, follow))
        except OSError:
            return False
        return True

    def isdir(self, path) -> bool:
        try:
            return realfs.isdir(self.read(path))
        except OSError:
            return False

    def write(self, path, *, keep: bool, force: bool = False, count: bool = True) -> str:
        """The physical path to change for ``path``: its shadow, made ready, when ``path`` is
        overlaid (or ``force``); else the path itself."""
        p = self.follow(self.logical(path))
        if not (force or self.overlaid(p)):
            return p
        s = self.shadow(p)
        if realfs.lstat(s) is None:
            parent = os.path.dirname(p)
            if not self.isdir(parent):
                raise error(errno.ENOENT, path)
            realfs.makedirs(os.path.dirname(s))
            if keep and not self.hidden(p) and realfs.lstat(p) is not None:
                realfs.copy(p, s)
        if count and not realfs.isdir(s):
            self.files_written.add(p)
        return s

    def untouched(self, path) -> bool:
        """Whether the run has changed nothing at or directly below ``path`` (it lists as it is)."""
        p = self.follow(self.logical(path))
        return (realfs.lstat(self.shadow(p)) is None and not self.hidden(p)
                and not any(os.path.dirname(h) == p for h in self._hidden))

    def listing(self, path) -> tuple[list[str], str | None]:
        """(names visible in the real folder, the shadow folder or None) for a listing of ``path``."""
        p = self.follow(self.logical(path))
        s = self.shadow(p)
        shadowed = realfs.isdir(s)
        if not shadowed and realfs.lstat(s) is not None:
            raise error(errno.ENOTDIR, path)
        real: list[str] = []
        if not self.hidden(p) and realfs.isdir(p):
            real = [n for n in realfs.real.listdir(p) if os.path.join(p, n) not in self._hidden]
        elif not shadowed:
            raise error(errno.ENOTDIR if self.exists(p) else errno.ENOENT, path)
        if shadowed:
            mine = set(realfs.real.listdir(s))
            real = [n for n in real if n not in mine]
        return real, s if shadowed else None

    # -- changes to the namespace ----------------------------------------------------------------

    def mkdir(self, path, mode: int = 0o777) -> None:
        if self.exists(path, follow=False):
            raise error(errno.EEXIST, path)
        s = self.write(path, keep=False, force=True, count=False)
        realfs.real.mkdir(s, mode)

    def remove(self, path) -> None:
        p = self.logical(path)
        if not self.exists(p, follow=False):
            raise error(errno.ENOENT, path)
        st = realfs.lstat(self.read(p, follow=False))
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise error(errno.EISDIR, path)
        self._drop(p)

    def rmdir(self, path) -> None:
        p = self.logical(path)
        if not self.exists(p, follow=False):
            raise error(errno.ENOENT, path)
        if not self.isdir(p):
            raise error(errno.ENOTDIR, path)
        real, mine = self.listing(p)
        if real or (mine and realfs.real.listdir(mine)):
            raise error(errno.ENOTEMPTY, path)
        self._drop(p)

    def rmtree(self, path) -> None:
        p = self.logical(path)
        if not self.exists(p, follow=False):
            raise error(errno.ENOENT, path)
        self._drop(p)

    def move(self, src, dst) -> None:
        """``os.rename``/``os.replace``: the view of ``src`` moves to ``dst``; real files stay."""
        a, b = self.logical(src), self.logical(dst)
        if not self.exists(a, follow=False):
            raise error(errno.ENOENT, src)
        if self.isdir(b) and not self.isdir(a):
            raise error(errno.EISDIR, dst)
        source = self.materialize(a) if self.overlaid(a) else a
        target = self.write(b, keep=False, force=True, count=not realfs.isdir(source))
        realfs.move(source, target)
        if source != a:
            self._hidden.add(a)
            self.files_written.discard(a)
        self._hidden.add(b)  # whatever was really at dst is replaced in the view (its shadow shows)

    def link(self, src, dst) -> None:
        a, b = self.logical(src), self.logical(dst)
        if not self.exists(a, follow=False):
            raise error(errno.ENOENT, src)
        if self.exists(b, follow=False):
            raise error(errno.EEXIST, dst)
        source = self.materialize(a) if self.overlaid(a) else a
        target = self.write(b, keep=False, force=True)
        try:
            realfs.real.link(source, target)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            realfs.copy(source, target)

    def symlink(self, target: str, link) -> None:
        if self.exists(link, follow=False):
            raise error(errno.EEXIST, link)
        # kept as written: the overlay follows it for the script, the guard stops a write it leads out
        realfs.real.symlink(target, self.write(link, keep=False, force=True, count=False))

    def materialize(self, logical: str) -> str:
        """Copy into the shadow what of ``logical``'s view is only real (before a move); its shadow."""
        s = self.shadow(logical)
        if realfs.lstat(s) is None:
            st = realfs.lstat(logical)
            if st is not None and stat.S_ISLNK(st.st_mode):  # the link itself moves, not its target
                realfs.makedirs(os.path.dirname(s))
                realfs.real.symlink(realfs.real.readlink(logical), s)
                return s
            self.write(logical, keep=True, force=True, count=False)
        if stat.S_ISDIR(realfs.real.lstat(s).st_mode):
            for name in self.listing(logical)[0]:
                self.materialize(os.path.join(logical, name))
        return s

    def refuse(self, path: str, how: str, where: str) -> CannotRedirect:
        self.refused.append((path, how, where))
        return CannotRedirect(f"amplint verify refused to write {path} ({how}): it cannot redirect that write")

    def _drop(self, logical: str) -> None:
        s = self.shadow(logical)
        if realfs.lstat(s) is not None:
            realfs.remove(s)
        self._hidden.add(logical)
        self.files_written = {f for f in self.files_written if not under(f, logical)}
