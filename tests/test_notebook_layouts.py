"""A notebook whose JSON layout json.dumps does not reproduce is still fixed, changing only its
cells' sources; one that cannot be written back at all is reported, never dropped silently."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat

from amplint.notebook_json import source_spans, splice_sources

CELL = ["import torch\n", "with torch.cuda.amp.autocast():\n", "    pass\n"]
FIXED_LINE = '"with torch.amp.autocast(\\"cuda\\"):\\n"'


def _notebook(metadata_text: str, newline: str = "\n", indent: int = 1) -> str:
    """An nbformat-4 notebook as another tool writes it: its metadata given as raw JSON text."""
    cells = [{"cell_type": "markdown", "id": "m1", "metadata": {}, "source": ["# Training\n"]},
             {"cell_type": "code", "execution_count": 3, "id": "c1", "metadata": {}, "outputs": [], "source": CELL}]
    text = json.dumps({"cells": cells, "metadata": "@META@", "nbformat": 4, "nbformat_minor": 5}, indent=indent)
    return text.replace('"@META@"', metadata_text).replace("\n", newline) + newline


def _amplint(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "amplint", "check", "--no-cache", *args],
                          cwd=cwd, capture_output=True, text=True)


def test_fix_keeps_a_layout_json_dumps_does_not_write(tmp_path):
    raw = _notebook('{"optimizer": {"lr": 1.0e-5, "betas": [0.9, 0.999]}}')
    path = tmp_path / "train.ipynb"
    path.write_text(raw, newline="")

    diff = _amplint(tmp_path, "--diff", "train.ipynb")
    assert diff.returncode == 1 and "+with torch.amp.autocast(\"cuda\"):\n" in diff.stdout
    fixed = _amplint(tmp_path, "--fix", "train.ipynb")
    assert fixed.returncode == 0, fixed.stderr

    after = path.read_text()
    assert after == raw.replace('"with torch.cuda.amp.autocast():\\n"', FIXED_LINE)
    assert '"lr": 1.0e-5' in after
    nbformat.validate(nbformat.reads(after, as_version=4))
    assert _amplint(tmp_path, "--fix", "train.ipynb").returncode == 0 and path.read_text() == after


def test_a_notebook_that_cannot_be_written_back_is_reported_and_left_alone(cli, tmp_path, monkeypatch):
    # Splicing places any source a fix makes; what it cannot place (a fix that garbled a
    # placeholder of IPython syntax, a cell without a source key) comes back as None.
    from amplint.notebook import Notebook

    monkeypatch.setattr(Notebook, "with_text", lambda self, fixed: None)
    raw = _notebook('{"lr": 1.0e-5}')
    path = tmp_path / "train.ipynb"
    path.write_text(raw)

    for mode in ("--fix", "--diff"):
        result = cli("check", "--no-cache", "-j1", mode, "train.ipynb")
        assert result.exit_code == 1, (mode, result.stdout, result.stderr)
        assert "train.ipynb: fixes not applied: the fixed cells cannot be written back into the notebook" in result.stderr
        # the finding is still there, and not counted as fixed
        assert "AMP001" in result.stdout if mode == "--fix" else "1 would remain" in result.stderr
        assert path.read_text() == raw


def test_spans_are_the_source_values():
    raw = _notebook('{"lr": 1.0e-5}', newline="\r\n", indent=2)
    spans = source_spans(raw)
    assert sorted(spans) == [0, 1]
    start, end = spans[1]
    assert json.loads(raw[start:end]) == CELL


def test_splice_keeps_each_layout():
    for newline, indent in (("\n", 1), ("\r\n", 2), ("\n", None)):
        raw = _notebook('{"lr": 1.0e-5}', newline=newline, indent=indent)
        new = CELL[:1] + ['with torch.amp.autocast("cuda"):\n'] + CELL[2:]
        spliced = splice_sources(raw, {1: new})
        assert spliced == raw.replace('"with torch.cuda.amp.autocast():\\n"', FIXED_LINE), (newline, indent)


def test_splice_writes_a_string_source_as_a_string_and_refuses_what_it_cannot_place():
    raw = '{"cells": [{"cell_type": "code", "source": "x = 1\\n", "metadata": {}}], "nbformat": 4}'
    assert json.loads(splice_sources(raw, {0: "x = 2\n"}))["cells"][0]["source"] == "x = 2\n"
    assert splice_sources(raw, {1: "y"}) is None  # no such cell
    assert splice_sources("[1, 2]", {0: "x"}) is None  # not a notebook object
