"""Every format shows a notebook finding's cell: the human ones as ``cell 3:4:5`` (as ruff does), and
the CI ones, which can only point at a line of the file they are given, at the line and column of
the ``.ipynb`` JSON text that hold the flagged code, with ``cell 3, line 4`` leading the message."""

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


FLAGGED = "torch.cuda.amp.autocast"


def _json_line(tmp_path, name: str, line: int) -> str:
    """Line ``line`` of the notebook's JSON text, as a CI service shows it."""
    return (tmp_path / name).read_text().split("\n")[line - 1]


def _assert_points_at_flagged_code(tmp_path, name: str, line: int, column: int, end_column: int | None = None) -> None:
    text = _json_line(tmp_path, name, line)
    assert text[column - 1 :].startswith(FLAGGED), (line, column, text)
    if end_column is not None:
        assert text[column - 1 : end_column - 1] == FLAGGED


def test_pylint_gives_the_json_line_and_the_cell_position(cli, notebook, tmp_path):
    out = _out(cli, notebook, "pylint")
    head, message = out.split(" [AMP001] ", 1)
    assert message.startswith("cell 3, line 3: `torch.cuda.amp.autocast` is deprecated")
    name, line = head.rstrip(":").rsplit(":", 1)
    assert name == "train.ipynb"
    assert FLAGGED in _json_line(tmp_path, name, int(line))


def test_github_annotates_the_json_line_that_holds_the_code(cli, notebook, tmp_path):
    out = _out(cli, notebook, "github")
    properties, message = out.strip().split("::")[1:]
    fields = dict(item.split("=", 1) for item in properties.split(" ", 1)[1].split(","))
    assert message.startswith("cell 3, line 3: `torch.cuda.amp.autocast`")
    assert fields["line"] == fields["endLine"]
    _assert_points_at_flagged_code(tmp_path, fields["file"], int(fields["line"]), int(fields["col"]), int(fields["endColumn"]))


def test_azure_logs_the_json_line_that_holds_the_code(cli, notebook, tmp_path):
    out = _out(cli, notebook, "azure")
    properties, message = out.strip().split(" ", 1)[1].split("]", 1)
    fields = dict(item.split("=", 1) for item in properties.strip(";").split(";"))
    assert message.startswith("cell 3, line 3: `torch.cuda.amp.autocast`")
    _assert_points_at_flagged_code(tmp_path, fields["sourcepath"], int(fields["linenumber"]), int(fields["columnnumber"]))


def test_sarif_region_is_in_the_json_text(cli, notebook, tmp_path):
    result = json.loads(_out(cli, notebook, "sarif"))["runs"][0]["results"][0]
    assert result["message"]["text"].startswith("cell 3, line 3: `torch.cuda.amp.autocast`")
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == region["endLine"]
    _assert_points_at_flagged_code(tmp_path, notebook, region["startLine"], region["startColumn"], region["endColumn"])
    assert "fixes" not in result  # the fix's edits are in cell rows, not in the JSON text


def test_junit(cli, notebook):
    failure = ET.fromstring(_out(cli, notebook, "junit")).find(".//failure")
    assert failure.text.startswith("cell 3, line 3, col 6, `torch.cuda.amp.autocast`")


def test_gitlab_points_at_the_json_line_and_fingerprints_the_cells_line(cli, notebook, tmp_path):
    issue = json.loads(_out(cli, notebook, "gitlab"))[0]
    assert issue["description"].startswith("AMP001 (deprecated-amp-api): cell 3, line 3: ")
    begin, end = issue["location"]["positions"]["begin"], issue["location"]["positions"]["end"]
    _assert_points_at_flagged_code(tmp_path, notebook, begin["line"], begin["column"], end["column"])
    from amplint.report.gitlab import fingerprint

    assert issue["fingerprint"] == fingerprint("AMP001", "train.ipynb", "with torch.cuda.amp.autocast():", 0)


def test_rdjson(cli, notebook, tmp_path):
    diagnostic = json.loads(_out(cli, notebook, "rdjson"))["diagnostics"][0]
    assert diagnostic["message"].startswith("cell 3, line 3: ")
    span = diagnostic["location"]["range"]
    _assert_points_at_flagged_code(tmp_path, notebook, span["start"]["line"], span["start"]["column"], span["end"]["column"])


def _write(tmp_path, name: str, cells: list, **dumps) -> None:
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / name).write_text(json.dumps(notebook, **dumps) + "\n", encoding="utf-8")


def _code_cell(source) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_escaped_characters_before_the_code_keep_the_column_exact(cli, tmp_path, ensure_ascii):
    # One string for the whole cell (not a list of lines), with escapes before the flagged code
    # and a character outside the BMP, which ensure_ascii writes as a surrogate pair.
    source = 'import torch\ns = "\u00e9\\"\t\U0001F600"; ctx = torch.cuda.amp.autocast()\n'
    _write(tmp_path, "t.ipynb", [_code_cell(source)], indent=2, ensure_ascii=ensure_ascii)
    region = json.loads(_out(cli, "t.ipynb", "sarif"))["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]
    _assert_points_at_flagged_code(tmp_path, "t.ipynb", region["startLine"], region["startColumn"], region["endColumn"])
    # The one line of the file that holds the whole cell's source.
    assert _json_line(tmp_path, "t.ipynb", region["startLine"]).lstrip().startswith('"source": "import torch\\n')


def test_rdjson_counts_the_json_lines_bytes(cli, tmp_path):
    _write(tmp_path, "t.ipynb", [_code_cell(["import torch\n", 'é = 1; ctx = torch.cuda.amp.autocast()\n'])],
           indent=1, ensure_ascii=False)
    start = json.loads(_out(cli, "t.ipynb", "rdjson"))["diagnostics"][0]["location"]["range"]["start"]
    line = _json_line(tmp_path, "t.ipynb", start["line"]).encode("utf-8")
    assert line[start["column"] - 1 :].startswith(FLAGGED.encode())
    assert start["column"] == len('    "é = 1; ctx = '.encode()) + 1


def test_a_span_over_several_cell_lines_ends_on_its_own_json_line(tmp_path):
    from amplint.notebook_positions import notebook_positions

    raw = json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# t"]},
                                _code_cell(["a = (\n", "    1)\n"])], "metadata": {}}, indent=1)
    positions = notebook_positions(raw)
    lines = raw.split("\n")
    line, column = positions.file_position(2, 2, 5)
    assert lines[line - 1][column - 1 :] == '1)\\n"'
    line, column = positions.file_position(2, 1, 1)
    assert lines[line - 1][column - 1 :].startswith("a = (")
    assert positions.file_position(1, 1, 1) is not None and positions.file_position(3, 1, 1) is None


def test_a_notebook_read_differently_gets_no_positions():
    from amplint.notebook_positions import notebook_positions

    assert notebook_positions("[1, 2]") is None
    assert notebook_positions('{"cells": [{"source": [1]}]}').file_position(1, 1, 1) is None


def test_json_lines_carries_the_cell_key(cli, notebook):
    record = json.loads(_out(cli, notebook, "json-lines").splitlines()[0])
    assert (record["cell"], record["location"]) == (3, {"row": 3, "column": 6})


def test_python_files_are_unchanged(cli, tmp_path):
    (tmp_path / "a.py").write_text(CODE + "\n")
    assert _out(cli, "a.py", "pylint").startswith("a.py:3: [AMP001]")
    assert _out(cli, "a.py", "grouped").splitlines()[1].startswith("  3:6 AMP001")


def test_a_column_past_the_end_of_a_line_stays_on_that_line():
    from amplint.notebook_positions import notebook_positions

    raw = json.dumps({"cells": [_code_cell(["ab\n", "cd\n"])], "metadata": {}}, indent=1)
    line, column = notebook_positions(raw).file_position(1, 1, 40)
    assert raw.split("\n")[line - 1][column - 1 :] == '\\n",'


def test_a_fix_that_cannot_be_written_back_still_points_at_the_json_line(cli, notebook, tmp_path, monkeypatch):
    from amplint.notebook import Notebook

    monkeypatch.setattr(Notebook, "with_text", lambda self, fixed: None)
    run = cli("check", "--no-cache", "-j1", "--fix", "--output-format", "github", notebook)
    annotation = next(line for line in run.stdout.splitlines() if "AMP001" in line)
    fields = dict(item.split("=", 1) for item in annotation.split("::")[1].split(" ", 1)[1].split(","))
    _assert_points_at_flagged_code(tmp_path, notebook, int(fields["line"]), int(fields["col"]), int(fields["endColumn"]))
