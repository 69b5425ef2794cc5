"""Reversible monkey-patching.

Every patch made for a verify run goes through one ``Patcher`` so that all of them are undone in
reverse order, also when the user's script raises: the process may go on to run the FP32
reference, the tests or the user's own code afterwards.
"""

from __future__ import annotations

from typing import Any, Callable


class Patcher:
    def __init__(self) -> None:
        self._undo: list[tuple[Any, str, Any, bool]] = []
        self._callbacks: list[Callable[[], None]] = []

    def set(self, owner: Any, name: str, value: Any) -> Any:
        """Replace ``owner.name`` and return what was there, for wrappers to call."""
        had = name in vars(owner) if isinstance(owner, type) else hasattr(owner, name)
        old = getattr(owner, name)
        self._undo.append((owner, name, vars(owner).get(name, old) if isinstance(owner, type) else old, had))
        setattr(owner, name, value)
        return old

    def wrap(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        """``make(original)`` builds the replacement; keeps the original's name and docs."""
        original = getattr(owner, name)
        replacement = make(original)
        for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
            try:
                setattr(replacement, attr, getattr(original, attr))
            except (AttributeError, TypeError):
                pass
        self.set(owner, name, replacement)

    def on_undo(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)

    def undo(self) -> None:
        while self._callbacks:
            try:
                self._callbacks.pop()()
            except Exception:  # one failing handle must not leave the other patches in place
                pass
        while self._undo:
            owner, name, old, had = self._undo.pop()
            if isinstance(owner, type) and not had:
                # the attribute was inherited: deleting restores the lookup through the MRO
                try:
                    delattr(owner, name)
                except AttributeError:
                    pass
            else:
                setattr(owner, name, old)
