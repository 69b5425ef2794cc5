"""Every text format that shows a position shows a notebook finding's cell, as concise and full do."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import nbformat
import pytest

CODE = "import torch\n\nwith torch.cuda.amp.autocast():\n    pass"


@pytest.fixture
def notebook(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Training"), nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell(CODE)]
    (tmp_path / "train.ipynb").write_text(nbformat.writes(nb))
    return "train.ipynb"


def _out(cli, name: str, fmt: str) -> str:
    run = cli("check", "--no-cache", "--output-format", fmt, name)
    assert run.exit_code == 1, run
    return run.stdout


def test_grouped(cli, notebook):
    assert _out(cli, notebook, "grouped").splitlines()[:2] == [
        "train.ipynb:", "  cell 3:3:6 AMP001 [*] `torch.cuda.amp.autocast` is deprecated; use `torch.amp.autocast(\"cuda\", ...)`"]


def test_pylint(cli, notebook):
    assert _out(cli, notebook, "pylint").startswith("train.ipynb:cell 3:3: [AMP001] `torch.cuda.amp.autocast` is deprecated")


def test_azure_and_github_lead_the_message_with_the_cell(cli, notebook):
    assert "linenumber=3;columnnumber=6;code=AMP001;]cell 3: `torch.cuda.amp.autocast`" in _out(cli, notebook, "azure")
    assert "::cell 3: `torch.cuda.amp.autocast`" in _out(cli, notebook, "github")


def test_junit(cli, notebook):
    failure = ET.fromstring(_out(cli, notebook, "junit")).find(".//failure")
    assert failure.text.startswith("cell 3, line 3, col 6, `torch.cuda.amp.autocast`")


def test_gitlab_fingerprints_the_cells_line_not_the_json(cli, notebook, tmp_path):
    issue = json.loads(_out(cli, notebook, "gitlab"))[0]
    assert issue["description"].startswith("AMP001 (deprecated-amp-api): cell 3: ")
    from amplint.report.gitlab import fingerprint

    assert issue["fingerprint"] == fingerprint("AMP001", "train.ipynb", "with torch.cuda.amp.autocast():", 0)


def test_rdjson(cli, notebook):
    diagnostic = json.loads(_out(cli, notebook, "rdjson"))["diagnostics"][0]
    assert diagnostic["message"].startswith("cell 3: ")
    assert diagnostic["location"]["range"]["start"] == {"line": 3, "column": 6}


def test_json_lines_carries_the_cell_key(cli, notebook):
    record = json.loads(_out(cli, notebook, "json-lines").splitlines()[0])
    assert (record["cell"], record["location"]) == (3, {"row": 3, "column": 6})


def test_python_files_are_unchanged(cli, tmp_path):
    (tmp_path / "a.py").write_text(CODE + "\n")
    assert _out(cli, "a.py", "pylint").startswith("a.py:3: [AMP001]")
    assert _out(cli, "a.py", "grouped").splitlines()[1].startswith("  3:6 AMP001")
