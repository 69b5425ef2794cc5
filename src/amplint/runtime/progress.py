"""A one-line progress bar on stderr, redrawn at most ten times a second, and the board that
keeps it apart from the script's own output."""

from __future__ import annotations

import sys
import threading
import time

_CLEAR = "\r\033[K"


class Progress:
    def __init__(self, label: str, total: int | None, enabled: bool) -> None:
        self.label, self.total, self.enabled = label, total, enabled
        self._last = 0.0
        self._shown = False
        self._text = ""

    def __call__(self, count: int, record: dict) -> None:
        losses = [v for v in record.get("losses", []) if isinstance(v, float)]
        self.update(count, losses[-1] if losses else None)

    def update(self, count: int, loss: float | None) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.1 and count != self.total:
            return
        self._last = now
        shown = f" loss {loss:.4g}" if loss is not None else ""
        if self.total:
            filled = int(20 * min(count, self.total) / self.total)
            bar = "#" * filled + "-" * (20 - filled)
            self._text = f"{self.label:<5} [{bar}] {count}/{self.total}{shown}"
        else:
            self._text = f"{self.label:<5} {count} steps{shown}"
        self.redraw()

    def redraw(self) -> None:
        if self.enabled and self._text:
            sys.stderr.write(f"\r{self._text}   ")
            sys.stderr.flush()
            self._shown = True

    def clear(self) -> None:
        if self._shown:
            sys.stderr.write(_CLEAR)
            sys.stderr.flush()

    def close(self) -> None:
        if self._shown:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self._shown = False
            self._text = ""


class ProgressBoard:
    """One bar per run, and the script's output lines written between redraws of it."""

    def __init__(self, totals: dict[str, int], enabled: bool) -> None:
        self._totals, self._enabled = totals, enabled
        self._bar: Progress | None = None
        self._lock = threading.Lock()

    def step(self, mode: str, count: int, loss: float | None) -> None:
        with self._lock:
            if self._bar is None or self._bar.label != mode:
                if self._bar is not None:
                    self._bar.close()
                self._bar = Progress(mode, self._totals.get(mode), self._enabled)
            self._bar.update(count, loss)

    def write_line(self, stream: str, line: bytes) -> None:
        out = sys.stdout if stream == "stdout" else sys.stderr
        with self._lock:
            if self._bar is not None:
                self._bar.clear()
            buffer = getattr(out, "buffer", None)
            if buffer is not None:
                out.flush()
                buffer.write(line)
                buffer.flush()
            else:  # a text-only stream (captured output in tests or notebooks)
                out.write(line.decode(errors="replace"))
                out.flush()
            if self._bar is not None:
                self._bar.redraw()

    def close(self) -> None:
        with self._lock:
            if self._bar is not None:
                self._bar.close()
