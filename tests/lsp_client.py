"""A small Language Server Protocol client over a subprocess's stdio, as an editor would speak it.

Synchronous on purpose: a test sends a message and waits for the reply or notification it
expects. A reader thread parses the server's messages; requests from the server (such as
``workspace/applyEdit``) are answered by handlers the test registers.
"""

from __future__ import annotations

import itertools
import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable


class LspClient:
    def __init__(self, command: list[str], cwd: Path | None = None) -> None:
        self.process = subprocess.Popen(
            command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self._ids = itertools.count(1)
        self._responses: dict[int, "queue.Queue[dict]"] = {}
        self.notifications: "queue.Queue[dict]" = queue.Queue()
        self.handlers: dict[str, Callable[[Any], Any]] = {}
        self.server_requests: list[dict] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    # ------------------------------------------------------------------ wire format

    def _write(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        with self._lock:
            self.process.stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode("ascii") + body)
            self.process.stdin.flush()

    def _read_message(self) -> dict | None:
        length = None
        while True:
            line = self.process.stdout.readline()
            if not line:
                return None
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode("ascii").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        return json.loads(self.process.stdout.read(length))

    def _read_loop(self) -> None:
        while True:
            message = self._read_message()
            if message is None:
                return
            if "id" in message and "method" in message:  # a request from the server
                self.server_requests.append(message)
                handler = self.handlers.get(message["method"], lambda params: None)
                self._write({"id": message["id"], "result": handler(message.get("params"))})
            elif "id" in message:
                self._responses.setdefault(message["id"], queue.Queue()).put(message)
            else:
                self.notifications.put(message)

    # ------------------------------------------------------------------ API

    def request(self, method: str, params: Any, timeout: float = 30) -> Any:
        request_id = next(self._ids)
        box = self._responses.setdefault(request_id, queue.Queue())
        self._write({"id": request_id, "method": method, "params": params})
        response = box.get(timeout=timeout)
        if "error" in response:
            raise RuntimeError(f"{method}: {response['error']}")
        return response.get("result")

    def notify(self, method: str, params: Any) -> None:
        self._write({"method": method, "params": params})

    def wait_for(self, method: str, predicate: Callable[[dict], bool] = lambda params: True, timeout: float = 30) -> dict:
        """The params of the next notification ``method`` that satisfies ``predicate``."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no {method} within {timeout} s")
            message = self.notifications.get(timeout=remaining)
            if message.get("method") == method and predicate(message.get("params")):
                return message["params"]

    def initialize(self, root: Path, options: dict | None = None) -> dict:
        result = self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": root.as_uri(),
                "capabilities": {"workspace": {"applyEdit": True, "workspaceEdit": {"documentChanges": True}}},
                "initializationOptions": options or {},
            },
        )
        self.notify("initialized", {})
        return result

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
            self.process.wait(timeout=10)
        except Exception:  # noqa: BLE001 - a test already failing must still stop the server
            self.process.kill()
            self.process.wait()
        finally:
            for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
                stream.close()


def apply_text_edits(text: str, edits: list[dict]) -> str:
    """``text`` with LSP TextEdits applied (positions in UTF-16 units, as the server sends them)."""
    lines = text.splitlines(keepends=True)

    def offset(position: dict) -> int:
        line, character = position["line"], position["character"]
        before = sum(len(chunk) for chunk in lines[:line])
        if line >= len(lines):
            return len(text)
        units = lines[line].encode("utf-16-le")[: character * 2].decode("utf-16-le")
        return before + len(units)

    for edit in sorted(edits, key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]), reverse=True):
        start, end = offset(edit["range"]["start"]), offset(edit["range"]["end"])
        text = text[:start] + edit["newText"] + text[end:]
    return text
