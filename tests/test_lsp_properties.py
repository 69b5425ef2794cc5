"""Random documents full of Unicode line breaks and non-ASCII text: every LSP position the server
hands out, read back by an editor in each encoding, lands where amplint meant it."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types
from lsprotocol.converters import get_converter

import amplint
from amplint.api import lint_document
from amplint.lsp import values
from amplint.lsp.convert import LspPositions
from amplint.settings import Settings
from amplint.sourcefile import source_lines
from lsp_client import apply_text_edits, code_actions, edits_of, lsp_offset, open_document, start_server

ENCODINGS = ("utf-8", "utf-16", "utf-32")
# str.splitlines breaks at these; LSP and Python do not.
NOT_LINE_ENDS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
JUNK = st.text(st.sampled_from([*NOT_LINE_ENDS, "é", "ß", "中", "😀", "𝔘", "a", " "]), max_size=8)
AMP_BLOCKS = st.sampled_from(
    [
        ["with torch.cuda.amp.autocast():", "    pass"],
        ["scaler = torch.cuda.amp.GradScaler()"],
        ["enabled = torch.is_autocast_enabled()"],
    ]
)


@st.composite
def blocks(draw) -> list[str]:
    kind = draw(st.sampled_from(["amp", "amp with comment", "comment", "string", "string then amp"]))
    if kind == "comment":
        return [f"# {draw(JUNK)}"]
    if kind == "string":
        return [f"s = '{draw(JUNK)}'"]
    if kind == "string then amp":
        return [f"msg = '{draw(JUNK)}'; ctx = torch.cuda.amp.autocast()"]
    first, *rest = draw(AMP_BLOCKS)
    return [f"{first}  # {draw(JUNK)}" if kind == "amp with comment" else first, *rest]


@st.composite
def documents(draw) -> str:
    drawn = draw(st.lists(blocks(), max_size=6))
    # At least one deprecated call, so that there is always something to fix.
    drawn.insert(draw(st.integers(0, len(drawn))), [f"msg = '{draw(JUNK)}'; ctx = torch.cuda.amp.autocast()"])
    lines = ["import torch"] + list(itertools.chain.from_iterable(drawn))
    ends = [draw(st.sampled_from(["\n", "\r\n", "\r"])) for _ in lines]
    if not draw(st.booleans()):
        ends[-1] = ""
    return "".join(line + end for line, end in zip(lines, ends))


def as_json(edits) -> list[dict]:
    return get_converter().unstructure(edits)


def where(location) -> dict:
    """amplint's row and column as an LSP position in code points (UTF-32): the reference."""
    return {"line": location.row - 1, "character": location.column - 1}


def at_row_and_column(edits) -> list[dict]:
    return [{"range": {"start": where(e.location), "end": where(e.end_location)}, "newText": e.content} for e in edits]


FAST = settings(max_examples=60, deadline=None)


@FAST
@given(documents())
def test_diagnostics_cover_what_amplint_found(text):
    findings = amplint.lint_source(text, "train.py")
    assert findings and all(f.code != "AMP000" for f in findings)
    # amplint's row N is LSP line N - 1 only if both count the same lines.
    assert len(LspPositions(text).line_starts) == len(source_lines(text))
    for encoding in ENCODINGS:
        positions = LspPositions(text, encoding)
        for finding in findings:
            sent = as_json(values.diagnostic(positions, finding))["range"]
            assert lsp_offset(text, sent["start"], encoding) == lsp_offset(text, where(finding.location), "utf-32")
            assert lsp_offset(text, sent["end"], encoding) == lsp_offset(text, where(finding.end_location), "utf-32")


@FAST
@given(documents())
def test_fix_all_edits_give_amplint_fix_in_every_encoding(text):
    fixed = amplint.fix_source(text, "train.py")
    assert fixed != text
    for encoding in ENCODINGS:
        edits = as_json(values.whole_text_edits(LspPositions(text, encoding), fixed))
        assert apply_text_edits(text, edits, encoding) == fixed


@FAST
@given(documents())
def test_each_quick_fix_edits_what_amplint_meant_in_every_encoding(text):
    result = lint_document(text, "train.py", Settings(), edits=True)
    fixes = [finding.fix.edits for finding in result.findings if finding.fix is not None and finding.fix.edits]
    assert fixes
    for edits in fixes:
        wanted = apply_text_edits(text, at_row_and_column(edits), "utf-32")
        for encoding in ENCODINGS:
            assert apply_text_edits(text, as_json(values.text_edits(LspPositions(text, encoding), edits)), encoding) == wanted


@FAST
@given(documents(), st.data())
def test_ranged_changes_replace_what_the_editor_selected(text, data):
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    new_text = data.draw(JUNK)
    for encoding in ENCODINGS:
        positions = LspPositions(text, encoding)
        selected = types.Range(start=positions.position_at(start), end=positions.position_at(end))
        as_sent = as_json(selected)
        first, last = lsp_offset(text, as_sent["start"], encoding), lsp_offset(text, as_sent["end"], encoding)
        assert (positions.offset(selected.start), positions.offset(selected.end)) == (first, last)
        assert positions.replace(selected, new_text) == text[:first] + new_text + text[last:]


# ---------------------------------------------------------------------- through the server

CLIENTS = {"utf-8": ["utf-8", "utf-16"], "utf-16": None, "utf-32": ["utf-32"]}


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    root = tmp_path_factory.mktemp("lsp")
    running = {encoding: start_server(root, position_encodings=offer) for encoding, offer in CLIENTS.items()}
    yield root, running
    for client in running.values():
        client.close()


_documents = itertools.count()


@settings(max_examples=6, deadline=None)
@given(documents())
def test_the_servers_fix_all_gives_amplint_fix_in_every_encoding(servers, text):
    root, running = servers
    path = root / f"train_{next(_documents)}.py"
    fixed = amplint.fix_source(text, str(path))
    for encoding, client in running.items():
        assert client.capabilities["positionEncoding"] == encoding
        open_document(client, path, text)
        (action,) = code_actions(client, path, [], only=["source.fixAll"])
        assert apply_text_edits(text, edits_of(action, path), encoding) == fixed
