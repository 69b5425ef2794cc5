"""Every output format, end to end, on a hostile file name and a hostile source line.

The file name carries CR/LF followed by a GitHub workflow command, an ANSI escape, BEL, a bidi
override (U+202E), a C1 CSI (U+009B) and the separators of the CI formats (``% , ; ] :``). The
source carries the same kind of characters in a string literal that AMP013 quotes in its
message, and in a comment on a line that AMP001 reports (the source excerpt). Then a file whose
name is not UTF-8 at all, written to a strict UTF-8 stdout.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import unquote

import pytest

from amplint.report import FORMATS

SCHEMAS = Path(__file__).resolve().parent / "schemas"

HOSTILE_NAME = "a\r\n::error file=evil.py::pwned\x1b[31m\x07\u202e\u009b%,;]:.py"
HOSTILE_SOURCE = (
    "import torch\n"
    "def train(model, opt, loader):\n"
    "    for x, y in loader:\n"
    "        with torch.autocast(device_type='cuda', dtype=torch.float16):\n"
    "            out = model(x)\n"
    "        loss = crit(out, y)\n"
    '        loss.backward(inputs="""\x1b[2J\x07\u202e\u009b\x7f\n::error file=README.md::injected""")\n'
    "        opt.step()\n"
    '        _ = "\u202e\x1b[1m\u009b"; torch.cuda.amp.autocast()  # \x1b]0;title\x07 \u202e \u009b31m\n'
)
# What a terminal or a CI log viewer acts upon. Newline ends the report's own lines; tab is inert.
CONTROLLING = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")
TERMINAL_FORMATS = ("full", "concise", "grouped", "pylint")
JSON_FORMATS = ("json", "json-lines", "gitlab", "sarif", "rdjson")


@pytest.fixture
def hostile(files, tmp_path):
    (tmp_path / HOSTILE_NAME).write_text(HOSTILE_SOURCE, encoding="utf-8")
    return tmp_path


def check(cli, output_format, *extra):
    run = cli("check", HOSTILE_NAME, "--no-cache", "--select", "AMP001,AMP013", "--output-format", output_format, *extra)
    assert run.exit_code == 1, run
    return run


def test_every_format_is_covered_here():
    covered = {*TERMINAL_FORMATS, *JSON_FORMATS, "github", "azure", "junit"}
    assert covered == set(FORMATS)


@pytest.mark.parametrize("output_format", TERMINAL_FORMATS)
def test_terminal_formats_print_no_controlling_character(cli, hostile, output_format):
    run = check(cli, output_format)
    for stream in (run.stdout, run.stderr):
        assert CONTROLLING.findall(stream) == []
        assert not any(line.lstrip().startswith(("::", "##vso")) for line in stream.splitlines())
    assert "AMP013" in run.stdout and "AMP001" in run.stdout
    # The controls are shown, not dropped: ESC as its picture, the bidi override by its code point.
    assert "\u241b[2J" in run.stdout and "\\u202e" in run.stdout and "\\u009b" in run.stdout


def test_full_format_carets_stay_under_the_span_after_escaping(cli, hostile):
    run = check(cli, "full")
    lines = run.stdout.splitlines()
    excerpt = next(i for i, line in enumerate(lines) if line.startswith("10 | "))
    source, carets = lines[excerpt], lines[excerpt + 1]
    assert source.startswith('10 |         _ = "\\u202e\u241b[1m\\u009b"; torch')
    start = carets.index("^")
    assert source[start:].startswith("torch.cuda.amp.autocast")
    assert carets.count("^") == len("torch.cuda.amp.autocast")


def _github_decode(value: str) -> str:
    return value.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


# CR and LF go through the commands' own escapes, which the runner decodes back exactly; the
# characters those escapes cannot carry are shown as the terminal formats show them.
CI_SHOWN_NAME = "a\r\n::error file=evil.py::pwned\u241b[31m\u2407\\u202e\\u009b%,;]:.py"


def test_github_annotations_round_trip_and_stay_one_line_each(cli, hostile):
    out = check(cli, "github").stdout
    lines = out.splitlines()
    assert len(lines) == 2 and all(line.startswith("::error ") for line in lines)
    assert "\r" not in out and CONTROLLING.findall(out) == []
    for line in lines:
        props_text, _, message_text = line[len("::error "):].partition("::")
        props = dict(item.split("=", 1) for item in props_text.split(","))
        assert set(props) == {"file", "line", "col", "endLine", "endColumn", "title"}
        assert _github_decode(props["file"]) == CI_SHOWN_NAME
        if props["line"] == "7":
            assert _github_decode(message_text).startswith('`loss.backward(inputs="""\u241b[2J\u2407')
            assert "\n::error file=README.md::injected" in _github_decode(message_text)


def _azure_decode(value: str) -> str:
    return value.replace("%0D", "\r").replace("%0A", "\n").replace("%3B", ";").replace("%5D", "]").replace("%AZP25", "%")


def test_azure_logging_commands_round_trip_and_stay_one_line_each(cli, hostile):
    out = check(cli, "azure").stdout
    lines = out.splitlines()
    assert len(lines) == 2 and "\r" not in out and CONTROLLING.findall(out) == []
    for line in lines:
        assert line.startswith("##vso[task.logissue ")
        props_text, _, message_text = line[len("##vso[task.logissue "):].partition("]")
        assert props_text.endswith(";")
        props = dict(item.split("=", 1) for item in props_text[:-1].split(";"))
        assert set(props) == {"type", "sourcepath", "linenumber", "columnnumber", "code"}
        assert _azure_decode(props["sourcepath"]) == CI_SHOWN_NAME
        if props["code"] == "AMP013":
            assert "\n::error file=README.md::injected" in _azure_decode(message_text)


def _json_documents(output_format: str, text: str) -> list:
    if output_format == "json-lines":
        return [json.loads(line) for line in text.splitlines()]
    return [json.loads(text)]


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@pytest.mark.parametrize("output_format", JSON_FORMATS)
def test_json_formats_keep_exact_values_in_inert_bytes(cli, hostile, output_format):
    out = check(cli, output_format).stdout
    assert CONTROLLING.findall(out) == []
    documents = _json_documents(output_format, out)
    values = list(_strings(documents))
    assert any('"""\x1b[2J\x07\u202e\u009b\x7f\n::error file=README.md::injected"""' in v for v in values)  # exact
    if output_format == "sarif":
        uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in documents[0]["runs"][0]["results"]]
        assert [unquote(uri) for uri in uris] == [HOSTILE_NAME, HOSTILE_NAME]
    else:
        assert any(v.endswith(HOSTILE_NAME) for v in values)


def test_junit_is_valid_xml_by_the_schema_and_names_the_file(cli, hostile):
    import xmlschema

    out = check(cli, "junit").stdout
    assert CONTROLLING.findall(out) == []
    xmlschema.XMLSchema(str(SCHEMAS / "jenkins-junit.xsd")).validate(out)
    root = ET.fromstring(out.encode("utf-8"))
    (suite,) = root.findall("testsuite")
    assert suite.get("name").startswith("a\u240d\u240a::error file=evil.py::pwned\u241b[31m\u2407")
    messages = [failure.get("message") for failure in root.iter("failure")]
    assert any("\u240a::error file=README.md::injected" in message for message in messages)


def test_diff_headers_are_one_inert_line(cli, hostile):
    run = cli("check", HOSTILE_NAME, "--no-cache", "--select", "AMP001", "--diff")
    assert run.exit_code == 1, run
    headers = [line for line in run.stdout.splitlines() if line.startswith(("--- ", "+++ "))]
    assert len(headers) == 2
    assert CONTROLLING.findall("\n".join(headers)) == []
    assert not any(line.startswith("::") for line in run.stdout.splitlines())


def test_show_fixes_and_errors_name_the_file_inertly(cli, hostile):
    run = cli("check", HOSTILE_NAME, "missing\x1b[2J.py", "--no-cache", "--select", "AMP001", "--diff", "--show-fixes")
    assert run.exit_code == 2, run
    assert CONTROLLING.findall(run.stderr) == []
    assert "missing\u241b[2J.py" in run.stderr


# --------------------------------------------------------------------------- non-UTF-8 file names

UNDECODABLE = b"b\xff.py"
DEPRECATED = b"import torch\nwith torch.cuda.amp.autocast():\n    pass\n"


@pytest.mark.parametrize("output_format", [*FORMATS, "diff"])
def test_undecodable_file_name_under_strict_utf8_stdout(tmp_path, output_format):
    os.makedirs(os.fsencode(tmp_path / "src"))
    with open(os.fsencode(tmp_path / "src") + b"/" + UNDECODABLE, "wb") as handle:
        handle.write(DEPRECATED)
    args = ["--diff"] if output_format == "diff" else ["--output-format", output_format]
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict", "LC_ALL": "C.UTF-8"}
    env.pop("AMPLINT_CACHE_DIR", None)
    proc = subprocess.run([sys.executable, "-m", "amplint", "check", "src", "--no-cache", *args],
                          cwd=tmp_path, capture_output=True, env=env, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert b"\xff" not in proc.stdout and b"internal error" not in proc.stderr
    text = proc.stdout.decode("utf-8")  # strict: raises on any byte that is not UTF-8
    if output_format in JSON_FORMATS:
        documents = _json_documents(output_format, text)
        flat = json.dumps(documents)
        assert ("b%FF.py" if output_format == "sarif" else "b\\\\xff.py") in flat
    elif output_format == "junit":
        ET.fromstring(proc.stdout)
        assert "b\\xff.py" in text
    else:
        assert "b\\xff.py" in text
