"""Checkpoint writes during verify go to a directory amplint made, never over the user's files.

``torch.save(obj, "ckpt/last.pt")`` writes ``<root>/<absolute path>`` instead, and a later
``torch.load`` of the same path in the same run reads that copy back, so a script that saves and
resumes within the run behaves as written. Paths never saved in this run load from where they
are (resuming from an existing checkpoint still works). File objects pass through untouched:
the script opened them itself.
"""

from __future__ import annotations

import os
from typing import Any


class CheckpointRedirect:
    def __init__(self, root: str) -> None:
        self.root = root
        self._copies: dict[str, str] = {}  # the script's absolute path -> where it was written

    @property
    def count(self) -> int:
        return len(self._copies)

    def save_target(self, f: Any) -> Any:
        if not isinstance(f, (str, os.PathLike)):
            return f
        original = os.path.abspath(os.fspath(f))
        copy = os.path.join(self.root, original.lstrip(os.sep))
        os.makedirs(os.path.dirname(copy), exist_ok=True)
        self._copies[original] = copy
        return copy

    def load_source(self, f: Any) -> Any:
        if not isinstance(f, (str, os.PathLike)):
            return f
        return self._copies.get(os.path.abspath(os.fspath(f)), f)
