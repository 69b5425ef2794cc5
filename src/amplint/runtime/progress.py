"""A one-line progress bar on stderr, redrawn at most ten times a second."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, label: str, total: int | None, enabled: bool) -> None:
        self.label, self.total, self.enabled = label, total, enabled
        self._last = 0.0
        self._shown = False

    def __call__(self, count: int, record: dict) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.1 and count != self.total:
            return
        self._last = now
        losses = [v for v in record.get("losses", []) if isinstance(v, float)]
        loss = f" loss {losses[-1]:.4g}" if losses else ""
        if self.total:
            filled = int(20 * min(count, self.total) / self.total)
            bar = "#" * filled + "-" * (20 - filled)
            text = f"\r{self.label:<5} [{bar}] {count}/{self.total}{loss}"
        else:
            text = f"\r{self.label:<5} {count} steps{loss}"
        sys.stderr.write(text + "   ")
        sys.stderr.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            sys.stderr.write("\n")
            sys.stderr.flush()
