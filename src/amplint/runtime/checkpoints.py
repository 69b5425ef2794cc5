"""During verify, what the script writes goes to a directory amplint made, never over the user's files.

:class:`CheckpointRedirect` puts one run behind an :class:`~.overlay.Overlay` rooted there:

* checkpoint writers redirect every path they are given (outside that directory), scratch space
  included: ``torch.save`` and ``torch.serialization.save`` (one function under two names,
  wrapped in ``hooks``), torch's zip writer beneath them (which any other alias of ``save``
  reaches: it writes from C++, past ``open``), ``torch.jit.save``, and ``safetensors``'
  ``save_file`` when it is installed; their loaders (``torch.load``, ``torch.jit.load``,
  ``safe_open``) read through the same view;
* every other write (``open`` in a write mode, ``os``, ``shutil``, ``pathlib``; see
  ``fs_patches``) is redirected when it would change a protected path: anything outside that
  directory, the temporary folder and the user's caches (``realfs.scratch_roots``);
* a write that gets past both is refused (``write_guard``), and the run is reported as one
  verify cannot judge.

Reads see the script's own writes, moves and deletions; what it never touched reads from where it
is (resuming from an existing checkpoint works, and leaves the file as it was).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from typing import Any

import amplint.runtime.fs_patches as fs_patches
import amplint.runtime.write_guard as write_guard
from .overlay import Overlay

# (module, function, position, keyword) of a path argument that native code opens by name
_NATIVE_WRITERS = (
    ("torch.serialization", "_open_zipfile_writer", 0, "name_or_buffer"),
    ("torch.jit", "save", 1, "f"),
    ("torch.jit._serialization", "save", 1, "f"),
    ("safetensors.torch", "save_file", 1, "filename"),
    ("safetensors.numpy", "save_file", 1, "filename"),
)
_NATIVE_READERS = (
    ("torch.jit", "load", 0, "f"),
    ("torch.jit._serialization", "load", 0, "f"),
    ("safetensors", "safe_open", 0, "filename"),
    ("safetensors.torch", "safe_open", 0, "filename"),
    ("safetensors.numpy", "safe_open", 0, "filename"),
)


class CheckpointRedirect:
    def __init__(self, root: str, own: str | None = None) -> None:
        self.overlay = Overlay(root, own)

    @property
    def count(self) -> int:
        """Files the run wrote into verify's directory instead of where the script asked."""
        return len(self.overlay.files_written)

    @property
    def refused(self) -> list[tuple[str, str, str]]:
        return self.overlay.refused

    def save_target(self, f: Any) -> Any:
        if not isinstance(f, (str, os.PathLike)) or not self.overlay.active:
            return f
        return self.overlay.write(f, keep=False, force=True)

    def load_source(self, f: Any) -> Any:
        if not isinstance(f, (str, os.PathLike)) or not self.overlay.active:
            return f
        return self.overlay.read(f)

    def install(self, patcher: Any) -> None:
        """Redirect until ``patcher`` is undone; install last, just before the script runs."""
        for table, convert in ((_NATIVE_WRITERS, self.save_target), (_NATIVE_READERS, self.load_source)):
            for module_name, name, index, keyword in table:
                module = _loaded(module_name)
                if module is not None and hasattr(module, name):
                    patcher.wrap(module, name,
                                 lambda original, i=index, k=keyword, c=convert: _path_arg(original, i, k, c))
        fs_patches.install(patcher, self.overlay)
        write_guard.arm(patcher, self.overlay)


def _loaded(name: str) -> Any:
    """The module, imported if it is installed (safetensors is optional); None if it is not."""
    try:
        if importlib.util.find_spec(name.split(".")[0]) is None:
            return None
        return importlib.import_module(name)
    except ImportError:
        return None


def _path_arg(original: Any, index: int, keyword: str, convert: Any) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        if len(args) > index:
            args = (*args[:index], convert(args[index]), *args[index + 1:])
        elif keyword in kwargs:
            kwargs[keyword] = convert(kwargs[keyword])
        return original(*args, **kwargs)

    return call
