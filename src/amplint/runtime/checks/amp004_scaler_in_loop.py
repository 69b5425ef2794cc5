"""AMP004 at runtime: a second GradScaler steps an optimizer a previous scaler already stepped.

Reported at the construction of the newer scaler. A resume that builds a new optimizer with
its new scaler is no finding: the pair is new.
"""

from __future__ import annotations

from typing import Any

from .base import DynamicCheck


class ScalerInLoop(DynamicCheck):
    code = "AMP004"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._owner: dict[int, int] = {}  # optimizer id -> id of the scaler that steps it
        self._sites: dict[int, tuple[str, int]] = {}

    def on_scaler_init(self, scaler: Any, site: tuple[str, int]) -> None:
        self._sites[id(scaler)] = site

    def on_scaler_step(self, scaler: Any, optimizer: Any) -> None:
        if not getattr(scaler, "_enabled", False):
            return
        owner = self._owner.setdefault(id(optimizer), id(scaler))
        if owner != id(scaler):
            self.report(
                "a second GradScaler steps the same optimizer; build the scaler once, "
                "before the loop, so its scale carries over between steps",
                self._sites.get(id(scaler)),
            )
            self._owner[id(optimizer)] = id(scaler)
