"""Positions through ``amplint server``: LSP line ends only, in the encoding the client negotiated."""

from __future__ import annotations

import pytest
from lsprotocol import types

import amplint
from amplint.lsp.convert import LspPositions, encoding_name
from amplint.model import Location
from lsp_client import apply_text_edits, change_document, code_actions, edits_of, open_document, start_server

# (general.positionEncodings the client offers, the encoding the server must then use)
NEOVIM = (["utf-8", "utf-16"], "utf-8")
DEFAULT = (None, "utf-16")
UTF32 = (["utf-32"], "utf-32")
CLIENTS = pytest.mark.parametrize("offer, encoding", [NEOVIM, DEFAULT, UTF32], ids=["neovim-utf-8", "default-utf-16", "utf-32"])

FORM_FEED = "import torch\n# page\x0cbreak\nwith torch.cuda.amp.autocast():\n    pass\n"
# Every character str.splitlines breaks at and LSP does not, and the three LSP line ends.
SEPARATORS = (
    "import torch\r\n# \x0b \x0c \x1c \x1d \x1e \x85 \u2028 \u2029\r"
    "s = 'é\u2028😀'\nwith torch.cuda.amp.autocast():  # \x85\r\n    pass\r"
    "scaler = torch.cuda.amp.GradScaler()"
)
ACCENTED = "import torch\nmsg = 'température'; ctx = torch.cuda.amp.autocast()\n"
ACCENTED_AND_EMOJI = "import torch\nmsg = 'température 😀'; ctx = torch.cuda.amp.autocast()\n"


def units(text: str, encoding: str) -> int:
    return {"utf-8": len(text.encode("utf-8")), "utf-16": len(text.encode("utf-16-le")) // 2, "utf-32": len(text)}[encoding]


@pytest.fixture
def start(tmp_path):
    clients = []

    def make(offer, encoding):
        clients.append(start_server(tmp_path, position_encodings=offer))
        # Announced as it is used: the editor counts in what the server says.
        assert clients[-1].capabilities["positionEncoding"] == encoding
        return clients[-1]

    yield make
    for client in clients:
        client.close()


@CLIENTS
def test_fix_all_after_a_form_feed_edits_the_right_lines(start, tmp_path, offer, encoding):
    client = start(offer, encoding)
    path = tmp_path / "train.py"
    open_document(client, path, FORM_FEED)
    (action,) = code_actions(client, path, [], only=["source.fixAll"])
    assert apply_text_edits(FORM_FEED, edits_of(action, path), encoding) == amplint.fix_source(FORM_FEED, str(path))


@CLIENTS
def test_apply_autofix_after_unicode_line_breaks_edits_the_right_lines(start, tmp_path, offer, encoding):
    client = start(offer, encoding)
    path = tmp_path / "train.py"
    applied: list[str] = []

    def apply_edit(params):
        (change,) = params["edit"]["documentChanges"]
        applied.append(apply_text_edits(SEPARATORS, change["edits"], encoding))
        return {"applied": True}

    client.handlers["workspace/applyEdit"] = apply_edit
    assert len(open_document(client, path, SEPARATORS)["diagnostics"]) == 2
    client.request("workspace/executeCommand", {"command": "amplint.applyAutofix", "arguments": [path.as_uri()]})
    assert applied == [amplint.fix_source(SEPARATORS, str(path))]


@pytest.mark.parametrize(
    "offer, encoding, text",
    [(*NEOVIM, ACCENTED), (*NEOVIM, ACCENTED_AND_EMOJI), (*UTF32, ACCENTED_AND_EMOJI)],
    ids=["neovim-accented", "neovim-emoji", "utf-32-emoji"],
)
def test_quick_fix_after_non_ascii_counts_the_negotiated_units(start, tmp_path, offer, encoding, text):
    # UTF-16 (and UTF-32 without an emoji) counts as the old server did: test_positions_are_utf16_code_units.
    client = start(offer, encoding)
    path = tmp_path / "train.py"
    (diagnostic,) = open_document(client, path, text)["diagnostics"]
    before_call = text.split("\n")[1].split("torch.cuda")[0]
    assert diagnostic["range"]["start"] == {"line": 1, "character": units(before_call, encoding)}
    (action, *_) = code_actions(client, path, [diagnostic], only=["quickfix"])
    assert apply_text_edits(text, edits_of(action, path), encoding) == amplint.fix_source(text, str(path))


@CLIENTS
def test_ranged_changes_after_a_form_feed_land_where_the_editor_made_them(start, tmp_path, offer, encoding):
    client = start(offer, encoding)
    path = tmp_path / "train.py"
    text = "import torch\n# page\x0cbreak\nx = 'é😀'; ctx = torch.cuda.amp.autocast()\n"
    assert [d["code"] for d in open_document(client, path, text)["diagnostics"]] == ["AMP001"]
    call_line = "x = 'é😀'; ctx = torch.cuda.amp.autocast()"
    start_character = units("x = 'é😀'; ctx = ", encoding)
    # Applied in order: the second range counts lines after the first change inserted one.
    changes = [
        {"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}}, "text": "# \u2028é\x0c\n"},
        {
            "range": {
                "start": {"line": 3, "character": start_character},
                "end": {"line": 3, "character": units(call_line, encoding)},
            },
            "text": "torch.autocast('cuda')",
        },
    ]
    published = change_document(client, path, changes, 2)
    assert published["diagnostics"] == []
    expected = "import torch\n# \u2028é\x0c\n# page\x0cbreak\nx = 'é😀'; ctx = torch.autocast('cuda')\n"
    assert amplint.lint_source(expected, str(path)) == []
    # The server's copy is the editor's: appending a deprecated call is reported on the line it is on.
    end = {"line": 4, "character": 0}
    published = change_document(client, path, [{"range": {"start": end, "end": end}, "text": "y = torch.cuda.amp.autocast()\n"}], 3)
    assert [(d["code"], d["range"]["start"]) for d in published["diagnostics"]] == [("AMP001", {"line": 4, "character": 4})]


# ---------------------------------------------------------------------- the converter alone

TEXT = "a\x0cb\r\nc\u2028d\re😀f\n"  # LSP lines: "a\x0cb", "c\u2028d", "e😀f", ""


@pytest.mark.parametrize(
    "location, expected",
    [
        (Location(1, 3), {"utf-8": (0, 2), "utf-16": (0, 2), "utf-32": (0, 2)}),  # after the form feed
        (Location(2, 3), {"utf-8": (1, 4), "utf-16": (1, 2), "utf-32": (1, 2)}),  # after U+2028
        (Location(3, 3), {"utf-8": (2, 5), "utf-16": (2, 3), "utf-32": (2, 2)}),  # after the emoji
        (Location(3, 99), {"utf-8": (2, 6), "utf-16": (2, 4), "utf-32": (2, 3)}),  # past the line: its end
        (Location(4, 1), {"utf-8": (3, 0), "utf-16": (3, 0), "utf-32": (3, 0)}),  # after the final line end
        (Location(9, 9), {"utf-8": (3, 0), "utf-16": (3, 0), "utf-32": (3, 0)}),  # past the text: its end
    ],
)
def test_amplint_locations_become_lsp_positions(location, expected):
    for encoding, (line, character) in expected.items():
        assert LspPositions(TEXT, encoding).position(location) == types.Position(line=line, character=character)


def test_the_end_of_a_text_without_a_final_line_end_is_past_its_last_character():
    assert LspPositions("x\r\n# é😀", "utf-8").position(Location(7, 1)) == types.Position(line=1, character=8)


@pytest.mark.parametrize(
    "encoding, character, expected",
    [
        ("utf-16", 2, 10),  # inside the emoji's surrogate pair: the emoji's start
        ("utf-16", 3, 11),
        ("utf-8", 3, 10),  # inside the emoji's four bytes
        ("utf-8", 5, 11),
        ("utf-32", 2, 11),
        ("utf-16", 99, 12),  # past the line: its end, before "\n"
    ],
)
def test_client_positions_become_offsets(encoding, character, expected):
    assert LspPositions(TEXT, encoding).offset(types.Position(line=2, character=character)) == expected


def test_a_client_line_past_the_text_is_its_end():
    assert LspPositions(TEXT).offset(types.Position(line=7, character=0)) == len(TEXT)


def test_an_encoding_nobody_negotiates_is_read_as_utf16():
    assert [encoding_name(name) for name in (types.PositionEncodingKind.Utf8, "utf-32", "latin-1", None)] == [
        "utf-8",
        "utf-32",
        "utf-16",
        "utf-16",
    ]
