"""``amplint server`` under an editor's real traffic: bursts of changes, and broken framing."""

from __future__ import annotations

from pathlib import Path

import pytest

import amplint
from lsp_client import apply_text_edits, edits_of, open_document, start_server

DEPRECATED = "import torch\n\nwith torch.cuda.amp.autocast():\n    pass\n"
BURST = 30


@pytest.fixture
def client(tmp_path):
    client = start_server(tmp_path)
    yield client
    client.close()


def _version_text(version: int) -> str:
    # Each version moves the finding down a line, so a diagnostic says which text it came from.
    return "# edit\n" * version + DEPRECATED


def _publishes(client, uri: str) -> list[dict]:
    return [m["params"] for m in list(client.received) if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri]


def _change(client, uri: str, version: int) -> None:
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": _version_text(version)}]},
    )


def test_a_burst_of_changes_is_linted_once_for_its_last_version(client, tmp_path):
    path = tmp_path / "train.py"
    uri = path.as_uri()
    open_document(client, path, _version_text(1))
    for version in range(2, BURST + 2):
        _change(client, uri, version)
    last = client.wait_for("textDocument/publishDiagnostics", lambda p: p["uri"] == uri and p.get("version") == BURST + 1, timeout=120)
    (diagnostic,) = last["diagnostics"]
    assert diagnostic["range"]["start"]["line"] == BURST + 1 + 2
    burst = _publishes(client, uri)[1:]
    # Counted, not timed: linting every version published one diagnostics per change.
    assert 1 <= len(burst) <= 3, [p["version"] for p in burst]
    assert burst[-1] == last


def test_a_code_action_during_a_burst_is_answered_on_the_current_text_before_its_lint(client, tmp_path):
    path = tmp_path / "train.py"
    uri = path.as_uri()
    open_document(client, path, _version_text(1))
    for version in range(2, 12):
        _change(client, uri, version)
    final = _version_text(11)
    start = {"line": 11 + 2, "character": 5}
    asked = {"range": {"start": start, "end": {"line": 13, "character": 28}}, "code": "AMP001", "source": "amplint", "message": "m"}
    box = client.send_request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": asked["range"], "context": {"diagnostics": [asked], "only": ["quickfix"]}})
    response = box.get(timeout=60)
    (quick_fix, *_) = [a for a in response["result"] if a.get("diagnostics")]
    assert apply_text_edits(final, edits_of(quick_fix, path)) == amplint.fix_source(final, "train.py")
    answered_at = next(i for i, m in enumerate(client.received) if m.get("id") == response["id"] and "method" not in m)
    published_before = [m for m in client.received[:answered_at] if m.get("method") == "textDocument/publishDiagnostics" and m["params"].get("version", 0) > 1]
    # Linting each change first, in order, published all ten of them before the answer.
    assert len(published_before) <= 1


@pytest.mark.parametrize(
    "broken",
    [
        b"Content-Length: 99999999999\r\n\r\n",
        b"Content-Length: -5\r\n\r\n{}",
        b'Content-Length: five\r\n\r\n{"jsonrpc": "2.0"}',
    ],
    ids=["too-long", "negative", "not-a-number"],
)
def test_a_message_with_a_bad_content_length_is_skipped_and_the_next_is_answered(client, tmp_path, broken):
    path = tmp_path / "train.py"
    diagnostics = open_document(client, path, DEPRECATED)["diagnostics"]
    client.write_raw(broken)
    context = {"diagnostics": diagnostics, "only": ["quickfix"]}
    actions = client.request("textDocument/codeAction", {"textDocument": {"uri": path.as_uri()}, "range": diagnostics[0]["range"], "context": context})
    assert any(a.get("diagnostics") for a in actions)
    logged = client.wait_for("window/logMessage", lambda p: "Content-Length" in p["message"])
    assert logged["type"] == 1 and "skipped" in logged["message"]
    assert client.process.poll() is None
