"""The contract of a dynamic check: one AMP code, told about the hooked torch calls it cares for.

The hooks call every check at each event with the run's shared :class:`AmpState`; a check keeps
only its own memory and reports through ``report``, which deduplicates by code and line.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar

from ..sites import user_frame
from ..state import AmpState

Report = Callable[[str, str, "tuple[str, int]"], None]  # (code, detail, (path, line))


class DynamicCheck:
    code: ClassVar[str]

    def __init__(self, state: AmpState, sink: Report) -> None:
        self.state = state
        self._sink = sink

    def report(self, detail: str, site: tuple[str, int] | None = None) -> None:
        self._sink(self.code, detail, site or user_frame())

    # events, in the order a training step meets them; a check overrides those it needs
    def on_scaler_init(self, scaler: Any, site: tuple[str, int]) -> None: ...

    def on_backward(self) -> None: ...

    def on_clip(self, name: str) -> None: ...

    def on_unscale(self, scaler: Any, optimizer: Any) -> None: ...

    def on_scaler_step(self, scaler: Any, optimizer: Any) -> None: ...

    def on_optimizer_step(self, optimizer: Any, inside_scaler_step: bool) -> None: ...

    def on_save(self, obj: Any) -> None: ...
