"""Same-project imports to files, the way Python finds them when the project is run from its folders.

``from utils import save_checkpoint`` in ``tools/train.py`` is looked for beside the script first
(``tools/utils.py``, the script's folder is ``sys.path[0]``), then in each folder above it up to
the project root (``utils.py``, ``src/`` layouts too); ``from .utils import x`` and
``from ..engine import y`` are relative to the importing file's package. A module is a ``.py``
file or a package's ``__init__.py``. Names from outside the project resolve to nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

from amplint.project.records import ImportedName


def _module_files(base: Path, dotted: str) -> list[Path]:
    if not dotted:
        return [base / "__init__.py"]
    relative = Path(*dotted.split("."))
    return [base / relative.with_suffix(".py"), base / relative / "__init__.py"]


def search_folders(importer: Path, root: Path) -> list[Path]:
    """The importing file's folder, then each folder above it up to ``root``.

    Outside ``root`` (a tree named by an absolute path from elsewhere), the folders above it up
    to the one its package is imported from: the first without an ``__init__.py``, where Python
    would find it on ``sys.path``. Either way the answer does not depend on the working directory
    when the tree is its own project root.
    """
    folder = importer.parent
    folders = [folder]
    try:
        folder.relative_to(root)
    except ValueError:
        while (folder / "__init__.py").is_file() and folder.parent != folder:
            folder = folder.parent
            folders.append(folder)
        return folders
    while folder != root and folder.parent != folder:
        folder = folder.parent
        folders.append(folder)
    return folders


_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def launch_root(importer: Path, root: Path) -> Path:
    """The folder a script is launched from, as far as a path it opens relative to the working
    directory can come from: ``root`` for a file inside it; for a file outside it (a tree named
    by an absolute path from elsewhere), the nearest folder above it that marks a project
    (``pyproject.toml``, ``setup.py``, ``setup.cfg``, ``.git``), else the file system's root, so
    that the answer does not depend on where amplint runs."""
    try:
        importer.relative_to(root)
        return root
    except ValueError:
        pass
    for folder in importer.parents:
        if any((folder / marker).exists() for marker in _PROJECT_MARKERS):
            return folder
    return Path(importer.anchor or "/")


def candidates(importer: Path, imported: ImportedName, root: Path) -> list[tuple[Path, str | None]]:
    """``(module file, attribute)`` pairs that may define ``imported``, most likely first.

    ``from pkg import name`` may name a function of ``pkg`` or the submodule ``pkg.name``; the
    attribute is ``None`` when the local name is bound to a whole module.
    """
    if imported.level:
        base = importer.parent
        for _ in range(imported.level - 1):
            base = base.parent
        bases = [base]
    else:
        bases = search_folders(importer, root)
    out: list[tuple[Path, str | None]] = []
    for base in bases:
        if imported.name is None:
            out.extend((path, None) for path in _module_files(base, imported.module))
        else:
            out.extend((path, imported.name) for path in _module_files(base, imported.module))
            sub = f"{imported.module}.{imported.name}" if imported.module else imported.name
            out.extend((path, None) for path in _module_files(base, sub))
    return out


def normalized(path: str | os.PathLike) -> str:
    """The key a module file is indexed under: its absolute, normalised path."""
    return os.path.normpath(os.path.abspath(os.fspath(path)))
