"""``amplint server`` driven over stdio by an LSP client, as an editor drives it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import amplint
from lsp_client import LspClient, apply_text_edits, change_document, code_actions, edits_of, open_document, start_server

ROOT = Path(__file__).resolve().parent.parent
DEPRECATED = "import torch\n\nwith torch.cuda.amp.autocast():\n    pass\n"
CLEAN = "import torch\n\nwith torch.autocast('cuda'):\n    pass\n"
HALF = (ROOT / "fixtures" / "AMP005" / "bad_autocast_only.py").read_text(encoding="utf-8")


@pytest.fixture
def start(tmp_path):
    clients = []

    def make(options: dict | None = None) -> LspClient:
        client = start_server(tmp_path, options)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def test_initialize_advertises_diagnostics_sync_code_actions_and_the_fix_all_command(start):
    capabilities = start().capabilities
    assert capabilities["textDocumentSync"]["openClose"] is True
    assert capabilities["textDocumentSync"]["change"] == 2  # incremental
    assert set(capabilities["codeActionProvider"]["codeActionKinds"]) == {"quickfix", "source.fixAll.amplint"}
    assert capabilities["executeCommandProvider"]["commands"] == ["amplint.applyAutofix"]


def test_diagnostics_on_open_change_and_save(start, tmp_path):
    client = start()
    path = tmp_path / "train.py"
    published = open_document(client, path, DEPRECATED)
    (diagnostic,) = published["diagnostics"]
    assert diagnostic["code"] == "AMP001"
    assert diagnostic["source"] == "amplint"
    assert diagnostic["severity"] == 1
    assert diagnostic["range"] == {"start": {"line": 2, "character": 5}, "end": {"line": 2, "character": 28}}
    assert diagnostic["message"].startswith("`torch.cuda.amp.autocast` is deprecated")

    assert change_document(client, path, CLEAN, 2)["diagnostics"] == []
    assert [d["code"] for d in change_document(client, path, DEPRECATED, 3)["diagnostics"]] == ["AMP001"]

    client.notify("textDocument/didSave", {"textDocument": {"uri": path.as_uri()}})
    saved = client.wait_for("textDocument/publishDiagnostics", lambda p: p["uri"] == path.as_uri())
    assert [d["code"] for d in saved["diagnostics"]] == ["AMP001"]


def test_quick_fix_applies_the_findings_fix_and_clears_the_diagnostic(start, tmp_path):
    client = start()
    path = tmp_path / "train.py"
    diagnostics = open_document(client, path, DEPRECATED)["diagnostics"]
    quick_fixes = [a for a in code_actions(client, path, diagnostics) if a["kind"] == "quickfix" and a.get("diagnostics")]
    (action,) = quick_fixes
    assert action["title"] == "amplint (AMP001): Rewrite to `torch.amp.autocast`"
    assert action["isPreferred"] is True
    fixed = apply_text_edits(DEPRECATED, edits_of(action, path))
    assert fixed == amplint.fix_source(DEPRECATED, "train.py")
    assert change_document(client, path, fixed, 2)["diagnostics"] == []


def test_fix_all_code_action_equals_amplint_fix(start, tmp_path):
    client = start()
    path = tmp_path / "train.py"
    text = (ROOT / "fixtures" / "AMP001" / "bad_import_forms.py").read_text(encoding="utf-8")
    diagnostics = open_document(client, path, text)["diagnostics"]
    assert len(diagnostics) > 1
    (action,) = code_actions(client, path, [], only=["source.fixAll"])
    assert (action["title"], action["kind"]) == ("Fix all amplint issues", "source.fixAll.amplint")
    fixed = apply_text_edits(text, edits_of(action, path))
    assert fixed == amplint.fix_source(text, str(path))
    assert fixed != text


def test_apply_autofix_command_sends_workspace_apply_edit(start, tmp_path):
    client = start()
    path = tmp_path / "train.py"
    applied: list[str] = []

    def apply_edit(params):
        (change,) = params["edit"]["documentChanges"]
        applied.append(apply_text_edits(DEPRECATED, change["edits"]))
        return {"applied": True}

    client.handlers["workspace/applyEdit"] = apply_edit
    open_document(client, path, DEPRECATED)
    client.request("workspace/executeCommand", {"command": "amplint.applyAutofix", "arguments": [path.as_uri()]})
    assert [r["method"] for r in client.server_requests] == ["workspace/applyEdit"]
    assert client.server_requests[0]["params"]["label"] == "Fix all amplint issues"
    assert applied == [amplint.fix_source(DEPRECATED, "train.py")]


def test_positions_are_utf16_code_units(start, tmp_path):
    client = start()
    path = tmp_path / "emoji.py"
    text = 'import torch\nx = "\U0001F600"; ctx = torch.cuda.amp.autocast()\n'
    (diagnostic,) = open_document(client, path, text)["diagnostics"]
    # The emoji is one code point but two UTF-16 units: the call starts at unit 16, not 15.
    assert diagnostic["range"]["start"] == {"line": 1, "character": 16}
    (action, *_) = code_actions(client, path, [diagnostic], only=["quickfix"])
    assert apply_text_edits(text, edits_of(action, path)) == amplint.fix_source(text, "emoji.py")


def test_unsafe_fixes_are_offered_only_when_asked(start, tmp_path):
    path = tmp_path / "half.py"
    default = start()
    diagnostics = [d for d in open_document(default, path, HALF)["diagnostics"] if d["code"] == "AMP005"]
    assert diagnostics
    assert [a for a in code_actions(default, path, diagnostics, only=["quickfix"]) if a.get("diagnostics")] == []

    opted_in = start({"unsafeFixes": True})
    diagnostics = [d for d in open_document(opted_in, path, HALF)["diagnostics"] if d["code"] == "AMP005"]
    (action, *_) = [a for a in code_actions(opted_in, path, diagnostics, only=["quickfix"]) if a.get("diagnostics")]
    assert action["title"].endswith("(unsafe)")
    assert action["isPreferred"] is False
    fixed = apply_text_edits(HALF, edits_of(action, path))
    assert ".half()" not in fixed.splitlines()[7]


def test_per_file_ignores_of_the_documents_configuration(start, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.amplint.per-file-ignores]\n"legacy/*" = ["AMP001"]\n')
    (tmp_path / "legacy").mkdir()
    client = start()
    assert open_document(client, tmp_path / "legacy" / "old.py", DEPRECATED)["diagnostics"] == []
    assert [d["code"] for d in open_document(client, tmp_path / "new.py", DEPRECATED)["diagnostics"]] == ["AMP001"]


def test_syntax_error_while_typing_is_a_diagnostic(start, tmp_path):
    client = start()
    path = tmp_path / "train.py"
    open_document(client, path, DEPRECATED)
    (diagnostic,) = change_document(client, path, "import torch\ndef (:\n", 2)["diagnostics"]
    assert diagnostic["code"] == "AMP000"
    assert diagnostic["range"]["start"]["line"] == 1


def test_close_clears_diagnostics(start, tmp_path):
    client = start()
    path = tmp_path / "train.py"
    open_document(client, path, DEPRECATED)
    client.notify("textDocument/didClose", {"textDocument": {"uri": path.as_uri()}})
    assert client.wait_for("textDocument/publishDiagnostics", lambda p: p["uri"] == path.as_uri())["diagnostics"] == []


def test_server_without_pygls_says_how_to_install_it():
    probe = "import sys; sys.modules['pygls'] = None; from amplint.cli.main import main; main(['server'])"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert run.stderr == "amplint: error: amplint server needs pygls: pip install 'amplint[lsp]'\n"


def test_invalid_configuration_is_shown_once_not_on_every_change(start, tmp_path):
    (tmp_path / "amplint.toml").write_text('selct = ["AMP001"]\n')
    client = start()
    path = tmp_path / "train.py"
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": DEPRECATED}})
    shown = client.wait_for("window/showMessage")
    assert shown["type"] == 1
    assert shown["message"] == "amplint: amplint.toml: unknown key 'selct' (did you mean 'select'?)"
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": CLEAN}]})
    (tmp_path / "amplint.toml").write_text('select = ["AMP001"]\n')  # fixed: diagnostics come back
    published = change_document(client, path, DEPRECATED, 3)
    assert [d["code"] for d in published["diagnostics"]] == ["AMP001"]
    methods = []
    while not client.notifications.empty():
        methods.append(client.notifications.get().get("method"))
    assert "window/showMessage" not in methods


def test_a_text_too_deep_to_lint_says_so_instead_of_looking_clean(start, tmp_path):
    from amplint.syntaxcheck import MAX_EXPRESSION_DEPTH

    client = start()
    path = tmp_path / "chain.py"
    deep = "import torch\ny = a" + ".b()" * MAX_EXPRESSION_DEPTH + "\n" + DEPRECATED
    (diagnostic,) = open_document(client, path, deep)["diagnostics"]
    assert diagnostic["message"].startswith("not linted: an expression is nested")
    assert (diagnostic["source"], diagnostic["severity"]) == ("amplint", 1)
    assert diagnostic["range"]["start"] == {"line": 0, "character": 0}
    assert [d["code"] for d in change_document(client, path, DEPRECATED, 2)["diagnostics"]] == ["AMP001"]
