"""Every output format, fed fixtures with random byte and Unicode edits under odd file names.

Whatever the text (valid or not, control characters, bidi overrides, lone surrogates from bad
bytes, notebooks with mangled JSON), each reporter renders without raising; the machine formats
parse (JSON, JSON lines, SARIF, rdjson, GitLab, JUnit XML) and name only files of the run; the
CI formats put one annotation per line.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amplint.engine import lint_text
from amplint.model import FileResult
from amplint.report import FORMATS, ReportContext, get_reporter
from amplint.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted(p for p in (ROOT / "fixtures").rglob("*.py") if p.stat().st_size < 20_000)
ODD = "\x00\x01\x07\x0b\x0c\x1b\x1c\x7f\x85\u2028\u2029\u202e\ufeff\ud800é漢😀\r\t\\\"'"
SETTINGS = Settings(select=("ALL",))


def _mutated(data: st.DataObject) -> str:
    text = data.draw(st.sampled_from(FIXTURES)).read_text(encoding="utf-8")
    for _ in range(data.draw(st.integers(0, 6))):
        at = data.draw(st.integers(0, len(text)))
        kind = data.draw(st.sampled_from(("insert", "delete", "bytes")))
        if kind == "insert":
            text = text[:at] + data.draw(st.text(alphabet=ODD, min_size=1, max_size=4)) + text[at:]
        elif kind == "delete":
            text = text[:at] + text[at + data.draw(st.integers(1, 40)):]
        else:  # bytes that are not UTF-8, read as a lenient decoder would
            raw = data.draw(st.binary(min_size=1, max_size=4))
            text = text[:at] + raw.decode("utf-8", errors="surrogateescape") + text[at:]
    return text


def _results(data: st.DataObject) -> list[FileResult]:
    results = []
    for index in range(data.draw(st.integers(1, 3))):
        name = data.draw(st.sampled_from(("train.py", "dir/sp ace.py", "ünï\u202ecode.py", "a\x1bb.py", "x<y>&.py")))
        name = f"{index}_{name}"
        result = lint_text(_mutated(data), name, SETTINGS, edits=True)
        results.append(result)
    return results


def _check_machine_output(name: str, text: str) -> None:
    if name in ("json", "gitlab"):
        parsed = json.loads(text)
        assert isinstance(parsed, list)
    elif name == "json-lines":
        for line in text.splitlines():
            json.loads(line)
    elif name == "sarif":
        assert json.loads(text)["version"] == "2.1.0"
    elif name == "rdjson":
        json.loads(text)
    elif name == "junit":
        ET.fromstring(text.encode("utf-8", "surrogatepass"))
    elif name in ("github", "azure"):
        for line in text.splitlines():
            assert line.startswith(("::", "##vso[")), line
            assert not any(c in line for c in "\r\x1b\x07\x85\u2028\u2029\u202e"), line


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_every_format_renders_and_the_machine_formats_parse(data):
    results = _results(data)
    findings = sorted((f for r in results for f in r.findings), key=lambda f: f.sort_key())
    files = {r.filename for r in results}
    for name in FORMATS:
        context = ReportContext(results, "check", False, False, {}, name)
        text = get_reporter(name).render(findings, context)
        assert isinstance(text, str)
        _check_machine_output(name, text)
        if name == "json":
            assert {item["filename"] for item in json.loads(text)} <= files


def _random_text(rng) -> str:
    text = rng.choice(FIXTURES).read_text(encoding="utf-8")
    for _ in range(rng.randint(0, 6)):
        at = rng.randint(0, len(text))
        if rng.random() < 0.5:
            # An editor sends valid Unicode: no lone surrogates.
            text = text[:at] + "".join(rng.choice(ODD.replace("\ud800", "")) for _ in range(rng.randint(1, 4))) + text[at:]
        else:
            text = text[:at] + text[at + rng.randint(1, 40):]
    return text


def test_the_server_answers_every_mutated_version_and_its_edits_stay_in_the_document(tmp_path):
    import random

    from lsp_client import apply_text_edits, change_document, code_actions, edits_of, lsp_offset, open_document, start_server

    rng = random.Random(20261203)
    path = tmp_path / "train.py"
    client = start_server(tmp_path)
    try:
        open_document(client, path, "import torch\n")
        for version in range(2, 42):
            text = _random_text(rng)
            published = change_document(client, path, text, version)
            for diagnostic in published["diagnostics"]:  # positions inside the document (raises if not)
                assert lsp_offset(text, diagnostic["range"]["start"]) <= lsp_offset(text, diagnostic["range"]["end"])
            for action in code_actions(client, path, published["diagnostics"]):
                fixed = apply_text_edits(text, edits_of(action, path))  # raises when an edit is out of range
                assert isinstance(fixed, str)
        assert client.request("shutdown", None) is None
    finally:
        client.close()
