"""A file whose name (and a string it quotes) holds the characters a CI log acts upon.

ESC, BEL, DEL, ``\\x01``, U+0085, form feed, U+2028 and U+202E have no escape of their own in
GitHub workflow commands or Azure logging commands; every line-based format shows them as the
terminal formats do, and every JSON-based format keeps the exact name in ``\\u`` escapes.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from urllib.parse import unquote

import pytest

from test_report_injection import _strings  # every string a JSON report holds

NAME = "n\x1b[31m\x07\x7f\x01\x85\f\u2028\u202e\v\x1c\u2029yp.py"
# The name as the terminal formats print it: C0 controls as their pictures, the rest by code point.
SHOWN = "n\u241b[31m\u2407\u2421\u2401\\u0085\u240c\\u2028\\u202e\u240b\u241c\\u2029yp.py"
QUOTED = "\x1b[2J\x07\x7f\x01\x85\f\u2028\u202e"
SOURCE = (
    "import torch\n"
    "def train(model, opt, loader):\n"
    "    for x, y in loader:\n"
    "        with torch.autocast(device_type='cuda', dtype=torch.float16):\n"
    "            out = model(x)\n"
    "        loss = crit(out, y)\n"
    f'        loss.backward(inputs="{QUOTED}")\n'
    "        opt.step()\n"
    "    torch.cuda.amp.autocast()\n"
)
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028-\u202e\u2066-\u2069]")  # tab and newline aside
LINE_FORMATS = ("full", "concise", "grouped", "pylint", "github", "azure", "junit")
JSON_FORMATS = ("json", "json-lines", "gitlab", "sarif", "rdjson")


@pytest.fixture
def named(tmp_path):
    (tmp_path / NAME).write_text(SOURCE, encoding="utf-8")
    return tmp_path


def check(cli, output_format: str) -> str:
    run = cli("check", NAME, "--no-cache", "--select", "AMP001,AMP013", "--output-format", output_format)
    assert run.exit_code == 1, run
    assert RAW.findall(run.stderr) == []
    return run.stdout


def _shown_names(output_format: str, out: str) -> list[str]:
    if output_format == "github":
        return [re.search(r"file=([^,]*)", line)[1] for line in out.splitlines()]
    if output_format == "azure":
        return [re.search(r"sourcepath=([^;]*)", line)[1] for line in out.splitlines()]
    if output_format == "junit":
        return [suite.get("name") for suite in ET.fromstring(out.encode("utf-8")).iter("testsuite")]
    if output_format == "grouped":
        return [line[:-1] for line in out.splitlines() if line.startswith("n")]
    # full, concise, pylint: "NAME:row:..." heads each finding; source excerpts start with a digit or a space.
    return [line.partition(":")[0] for line in out.splitlines() if line.startswith("n")]


@pytest.mark.parametrize("output_format", LINE_FORMATS)
def test_line_formats_show_the_name_without_raw_controls(cli, named, output_format):
    out = check(cli, output_format)
    assert RAW.findall(out) == []
    assert "AMP001" in out and "AMP013" in out
    names = _shown_names(output_format, out)
    assert names and set(names) == {SHOWN}
    assert "\u241b[2J\u2407\u2421\u2401\\u0085\u240c\\u2028\\u202e" in out  # the quoted string, shown too


@pytest.mark.parametrize("output_format", ("github", "azure"))
def test_ci_commands_stay_one_line_per_finding(cli, named, output_format):
    # str.splitlines cuts wherever Unicode allows a line to end, as a log viewer may.
    lines = check(cli, output_format).splitlines()
    assert len(lines) == 2
    assert all(line.startswith(("::error ", "##vso[task.logissue ")) for line in lines)


@pytest.mark.parametrize("output_format", JSON_FORMATS)
def test_json_formats_keep_the_exact_name(cli, named, output_format):
    out = check(cli, output_format)
    assert RAW.findall(out) == []
    text_lines = out.splitlines() if output_format == "json-lines" else [out]
    values = [v for doc in text_lines for v in _strings(json.loads(doc))]
    if output_format == "sarif":
        assert any(unquote(v) == NAME for v in values)
    else:
        assert any(v == NAME or v.endswith("/" + NAME) for v in values)
    assert any(QUOTED in v for v in values)
