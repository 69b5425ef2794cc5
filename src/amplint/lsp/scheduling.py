"""When the language server lints: after a pause in typing, at most one lint per document at a time.

Linting a large file takes longer than the gap between keystrokes, so linting every version
queues work the editor no longer wants and keeps requests (code actions) waiting behind it.
Instead each document's lint waits for :data:`LINT_DELAY_S` without a newer change; a change
during a running lint marks the document for one more lint when that one ends, and the lint
itself drops its result if the text changed meanwhile (see ``AmplintServer.publish``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable

# Long enough that an editor's burst of changes (sent one by one, a few milliseconds apart) ends in
# one lint; short enough to add little to a keystroke's wait. Typing faster than a lint takes
# costs no queue either: a change during a lint asks for one more lint when it ends.
LINT_DELAY_S = 0.015

logger = logging.getLogger(__name__)


class LintScheduler:
    def __init__(self, lint: Callable[[str], Awaitable[None]]) -> None:
        self._lint = lint
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._running: dict[str, asyncio.Task[None]] = {}
        self._again: set[str] = set()

    def schedule(self, uri: str, delay: float = LINT_DELAY_S) -> None:
        """Lint ``uri`` once ``delay`` seconds pass without another call for it."""
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        self._timers[uri] = asyncio.get_running_loop().call_later(delay, self._start, uri)

    def cancel(self, uri: str) -> None:
        """Forget ``uri``'s pending and running lint (its document closed)."""
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        self._again.discard(uri)
        task = self._running.pop(uri, None)
        if task is not None:
            task.cancel()

    def cancel_all(self) -> None:
        for uri in {*self._timers, *self._running}:
            self.cancel(uri)

    def _start(self, uri: str) -> None:
        self._timers.pop(uri, None)
        if uri in self._running:
            # Two lints of one document would only compete for the same cores.
            self._again.add(uri)
            return
        self._running[uri] = asyncio.get_running_loop().create_task(self._run(uri))

    async def _run(self, uri: str) -> None:
        try:
            await self._lint(uri)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - one failed lint must not stop the next ones
            logger.exception("amplint: lint of %s failed", uri)
        finally:
            # A document closed and reopened meanwhile has a new task under the same uri.
            if self._running.get(uri) is asyncio.current_task():
                del self._running[uri]
                if uri in self._again:
                    self._again.discard(uri)
                    self._start(uri)
