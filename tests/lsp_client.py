"""A small Language Server Protocol client over a subprocess's stdio, as an editor would speak it.

Synchronous on purpose: a test sends a message and waits for the reply or notification it
expects. A reader thread parses the server's messages; requests from the server (such as
``workspace/applyEdit``) are answered by handlers the test registers.
"""

from __future__ import annotations

import itertools
import json
import queue
import re
import subprocess
import sys
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
        # Every message from the server in arrival order: the queues above lose the order
        # between a response and the notifications around it.
        self.received: list[dict] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    # ------------------------------------------------------------------ wire format

    def _write(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        self.write_raw(f"Content-Length: {len(body)}\r\n\r\n".encode("ascii") + body)

    def write_raw(self, data: bytes) -> None:
        """Bytes as they are, framed or not: for tests of what a broken client sends."""
        with self._lock:
            self.process.stdin.write(data)
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
            self.received.append(message)
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
        response = self.send_request(method, params).get(timeout=timeout)
        if "error" in response:
            raise RuntimeError(f"{method}: {response['error']}")
        return response.get("result")

    def send_request(self, method: str, params: Any) -> "queue.Queue[dict]":
        """Send a request without waiting; its response arrives in the returned queue."""
        request_id = next(self._ids)
        box = self._responses.setdefault(request_id, queue.Queue())
        self._write({"id": request_id, "method": method, "params": params})
        return box

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

    def initialize(self, root: Path, options: dict | None = None, position_encodings: list[str] | None = None) -> dict:
        """``position_encodings``: the client's ``general.positionEncodings`` (none sent if None)."""
        capabilities: dict = {"workspace": {"applyEdit": True, "workspaceEdit": {"documentChanges": True}}}
        if position_encodings is not None:
            capabilities["general"] = {"positionEncodings": position_encodings}
        result = self.request(
            "initialize",
            {"processId": None, "rootUri": root.as_uri(), "capabilities": capabilities, "initializationOptions": options or {}},
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


def start_server(cwd: Path, options: dict | None = None, position_encodings: list[str] | None = None) -> LspClient:
    """``amplint server`` in ``cwd``, initialized; its capabilities are in ``client.capabilities``."""
    client = LspClient([sys.executable, "-m", "amplint", "server"], cwd=cwd)
    client.capabilities = client.initialize(cwd, options, position_encodings)["capabilities"]
    return client


def open_document(client: LspClient, path: Path, text: str, version: int = 1) -> dict:
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}})
    return client.wait_for("textDocument/publishDiagnostics", lambda p: p["uri"] == uri and p.get("version") == version)


def change_document(client: LspClient, path: Path, text_or_changes: str | list[dict], version: int) -> dict:
    """Send a whole new text, or a list of ``contentChanges`` (ranged ones too)."""
    uri = path.as_uri()
    changes = [{"text": text_or_changes}] if isinstance(text_or_changes, str) else text_or_changes
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": changes})
    return client.wait_for("textDocument/publishDiagnostics", lambda p: p["uri"] == uri and p.get("version") == version)


def code_actions(client: LspClient, path: Path, diagnostics: list[dict], only: list[str] | None = None) -> list[dict]:
    context: dict = {"diagnostics": diagnostics}
    if only is not None:
        context["only"] = only
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 10_000, "character": 0}}
    return client.request(
        "textDocument/codeAction",
        {"textDocument": {"uri": path.as_uri()}, "range": diagnostics[0]["range"] if diagnostics else whole, "context": context},
    )


def edits_of(action: dict, path: Path) -> list[dict]:
    (change,) = action["edit"]["documentChanges"]
    assert change["textDocument"]["uri"] == path.as_uri()
    return change["edits"]


# What ends a line in LSP; written out again here so that the tests do not trust the server's.
_LSP_LINE_END = re.compile(r"\r\n|\r|\n")


def lsp_offset(text: str, position: dict, encoding: str = "utf-16") -> int:
    """The code-point offset of an LSP position in ``text``, as an editor using ``encoding`` reads it.

    A character past its line's end means the line's end (the LSP spec); a line past the last
    one, or a character that splits a code point, is an error here: no editor agrees on those.
    """
    starts = [0] + [match.end() for match in _LSP_LINE_END.finditer(text)]
    line, character = position["line"], position["character"]
    assert 0 <= line < len(starts), f"line {line} is past the text's {len(starts)} lines"
    end_match = _LSP_LINE_END.search(text, starts[line])
    content = text[starts[line] : end_match.start() if end_match else len(text)]
    if encoding == "utf-32":
        return starts[line] + min(character, len(content))
    codec, unit = {"utf-8": ("utf-8", 1), "utf-16": ("utf-16-le", 2)}[encoding]
    prefix = content.encode(codec)[: character * unit].decode(codec)  # strict: a split code point raises
    return starts[line] + len(prefix)


def apply_text_edits(text: str, edits: list[dict], encoding: str = "utf-16") -> str:
    """``text`` with LSP TextEdits applied as the spec says: every range refers to the original
    text, ranges do not overlap, and edits at the same place apply in their order."""
    spans = []
    for order, edit in enumerate(edits):
        start = lsp_offset(text, edit["range"]["start"], encoding)
        end = lsp_offset(text, edit["range"]["end"], encoding)
        assert start <= end, f"edit {order} ends before it starts"
        spans.append((start, end, order, edit["newText"]))
    spans.sort()
    pieces, done = [], 0
    for start, end, _, new_text in spans:
        assert start >= done, "overlapping edits"
        pieces += [text[done:start], new_text]
        done = end
    return "".join(pieces) + text[done:]
