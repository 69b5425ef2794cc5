"""Jupyter notebooks: code cells are linted, findings are located in cells, fixes are written
back into the cells with the rest of the notebook byte for byte as it was."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "fixtures" / "notebooks"


def _amplint(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "amplint", "check", "--no-cache", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def _expected(path: Path) -> list[tuple[int, int, str]]:
    """(cell, row, code) of every ``# expect: CODE`` comment in the notebook's code cells."""
    out = []
    for number, cell in enumerate(json.loads(path.read_text())["cells"], start=1):
        if cell["cell_type"] == "code":
            for row, line in enumerate("".join(cell["source"]).splitlines(), start=1):
                for code in re.findall(r"# expect: (AMP\d{3})", line):
                    out.append((number, row, code))
    return sorted(out)


def _reported(stdout: str, name: str) -> list[tuple[int, int, str]]:
    found = re.findall(rf"^{re.escape(name)}:cell (\d+):(\d+):\d+: (AMP\d{{3}})", stdout, flags=re.MULTILINE)
    return sorted((int(c), int(r), code) for c, r, code in found)


@pytest.mark.parametrize("name", ["train_with_outputs.ipynb", "magics.ipynb"])
def test_findings_are_reported_on_the_planted_cell_lines(name):
    run = _amplint(NOTEBOOKS, "--output-format", "concise", "--select", "ALL", name)
    assert run.returncode == 1, run.stderr
    assert _reported(run.stdout, name) == _expected(NOTEBOOKS / name)


def test_a_torch_cuda_amp_notebook_is_not_a_false_pass():
    run = _amplint(NOTEBOOKS, "--no-prefilter", "--select", "ALL", "train_with_outputs.ipynb")
    assert "All checks passed" not in run.stdout + run.stderr and run.returncode == 1


def test_json_carries_the_cell_and_rows_within_it():
    run = _amplint(NOTEBOOKS, "--output-format", "json", "train_with_outputs.ipynb")
    findings = json.loads(run.stdout)
    first = next(f for f in findings if f["code"] == "AMP001")
    assert (first["cell"], first["location"], first["end_location"]) == (3, {"row": 1, "column": 10}, {"row": 1, "column": 35})
    clip = next(f for f in findings if f["code"] == "AMP003")
    assert "line 8 of cell 3" in clip["message"]  # lines named in messages are cell lines too


def test_full_output_shows_the_cell_line():
    run = _amplint(NOTEBOOKS, "--select", "AMP003", "train_with_outputs.ipynb")
    assert "train_with_outputs.ipynb:cell 3:7:5: AMP003" in run.stdout
    assert "7 |     torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: AMP003" in run.stdout


def _without_sources(text: str) -> str:
    return re.sub(r'"source": (\[.*?\n   \]|".*?")', '"source": ...', text, flags=re.DOTALL)


@pytest.mark.parametrize("name", ["train_with_outputs.ipynb", "magics.ipynb"])
def test_fix_rewrites_cells_and_keeps_everything_else_byte_identical(tmp_path, name):
    path = tmp_path / name
    shutil.copy(NOTEBOOKS / name, path)
    before = path.read_text()
    run = _amplint(tmp_path, "--fix", "--unsafe-fixes", name)
    assert run.returncode in (0, 1), run.stderr
    after = path.read_text()
    assert after != before
    assert _without_sources(after) == _without_sources(before)  # outputs, metadata, order, indentation
    assert after.endswith("}\n")
    old, new = json.loads(before), json.loads(after)
    for cell_old, cell_new in zip(old["cells"], new["cells"]):
        if cell_old["cell_type"] != "code":
            assert cell_new == cell_old
        assert {k: v for k, v in cell_new.items() if k != "source"} == {k: v for k, v in cell_old.items() if k != "source"}
    nbformat.validate(nbformat.reads(after, as_version=4))
    assert _amplint(tmp_path, "--fix", "--unsafe-fixes", name).returncode in (0, 1)
    assert path.read_text() == after  # converges


def test_magics_survive_a_fix(tmp_path):
    path = tmp_path / "magics.ipynb"
    shutil.copy(NOTEBOOKS / "magics.ipynb", path)
    _amplint(tmp_path, "--fix", "magics.ipynb")
    cells = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
    assert cells[0].startswith("%load_ext autoreload\n%autoreload 2\n!pip install -q timm\n")
    assert "from torch.amp import autocast" in cells[0]
    assert cells[1] == "%%bash\nnvidia-smi\necho done"
    assert cells[2].startswith("%%time\nfiles = !ls data\nmodel?\nwith autocast(\"cuda\"):")
    assert cells[3] == "def show(x):\n    %matplotlib inline\n    return x"


def test_clean_notebook_and_directory_discovery(tmp_path):
    shutil.copytree(NOTEBOOKS, tmp_path / "nbs")
    run = _amplint(tmp_path, "--output-format", "concise", "nbs")
    assert "nbs/train_with_outputs.ipynb:cell 3:1:10: AMP001" in run.stdout
    assert "clean.ipynb" not in run.stdout
    clean = _amplint(tmp_path, "nbs/clean.ipynb")
    assert (clean.returncode, clean.stdout, clean.stderr) == (0, "All checks passed!\n", "")
    excluded = _amplint(tmp_path, "--extend-exclude", "*.ipynb", "nbs")
    assert "ipynb" not in excluded.stdout


def test_noqa_and_syntax_errors_inside_cells(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import torch\nwith torch.cuda.amp.autocast():  # noqa: AMP001\n    pass"),
        nbformat.v4.new_code_cell("def broken(:\n    pass"),
    ])
    nbformat.write(nb, str(tmp_path / "n.ipynb"))
    run = _amplint(tmp_path, "--output-format", "concise", "n.ipynb")
    assert run.stdout.splitlines()[0].startswith("n.ipynb:cell 2:1:12: AMP000 SyntaxError")
    assert "AMP001" not in run.stdout


@pytest.mark.parametrize("content, message", [
    ("{", "not valid notebook JSON"),
    ('{"metadata": {}}', "not a Jupyter notebook (no list of cells)"),
])
def test_a_file_that_is_not_a_notebook_is_one_line_and_never_clean(tmp_path, content, message):
    (tmp_path / "bad.ipynb").write_text(content)
    run = _amplint(tmp_path, "bad.ipynb")
    assert run.returncode == 1
    assert f"amplint: error: bad.ipynb: {message}" in run.stderr
    assert "All checks passed" not in run.stdout + run.stderr


def _notebook_with_outputs(code: str, output_bytes: int) -> str:
    image = "A" * output_bytes  # a base64 PNG in an output, as plots are stored
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(code)
    cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": image})]
    notebook.cells = [cell]
    return nbformat.writes(notebook)


def test_large_outputs_do_not_keep_a_notebook_s_code_from_being_linted(tmp_path):
    from amplint.sourcefile import MAX_FILE_BYTES

    path = tmp_path / "plots.ipynb"
    path.write_text(_notebook_with_outputs("import torch\nctx = torch.cuda.amp.autocast()\n", MAX_FILE_BYTES + 1024))
    assert path.stat().st_size > MAX_FILE_BYTES
    run = _amplint(tmp_path, "--output-format", "concise", "plots.ipynb")
    assert run.returncode == 1, run.stderr
    assert "plots.ipynb:cell 1:2:7: AMP001" in run.stdout
    assert "error:" not in run.stderr


def test_a_notebook_whose_code_is_too_large_is_not_linted(tmp_path):
    from amplint.sourcefile import MAX_FILE_BYTES

    code = "import torch\nctx = torch.cuda.amp.autocast()\n" + "x = 1\n" * (MAX_FILE_BYTES // 6 + 10)
    (tmp_path / "big.ipynb").write_text(_notebook_with_outputs(code, 10))
    run = _amplint(tmp_path, "big.ipynb")
    assert "amplint: error: big.ipynb: its code cells are too large to lint" in run.stderr
    assert "All checks passed" not in run.stdout


def _notebook(*cells: str) -> str:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    return nbformat.writes(notebook)


def test_a_syntax_error_in_one_cell_keeps_the_other_cells_findings(tmp_path):
    path = tmp_path / "nb.ipynb"
    path.write_text(_notebook(
        "import torch\nscaler = torch.cuda.amp.GradScaler()\n",
        "for x in loader:\n    loss = model(x\n",  # a half-typed cell
        "with torch.cuda.amp.autocast():\n    y = model(x)\n",
    ))
    run = _amplint(tmp_path, "--output-format", "concise", "nb.ipynb")
    lines = run.stdout.splitlines()
    assert any(line.startswith("nb.ipynb:cell 2:") and " AMP000 SyntaxError: " in line for line in lines), run.stdout
    assert any(line.startswith("nb.ipynb:cell 1:2:") and " AMP001 " in line for line in lines), run.stdout
    assert any(line.startswith("nb.ipynb:cell 3:1:") and " AMP001 " in line for line in lines), run.stdout


def test_fix_leaves_the_broken_cell_as_it_is_and_fixes_the_others(tmp_path):
    path = tmp_path / "nb.ipynb"
    broken = "for x in loader:\n    loss = model(x\n"
    path.write_text(_notebook("import torch\nscaler = torch.cuda.amp.GradScaler()\n", broken))
    _amplint(tmp_path, "--fix", "nb.ipynb")
    cells = [c.source for c in nbformat.reads(path.read_text(), as_version=4).cells]
    assert cells == ["import torch\nscaler = torch.amp.GradScaler(\"cuda\")\n", broken]


def test_a_shell_escape_continued_with_a_backslash_is_one_command(tmp_path):
    path = tmp_path / "nb.ipynb"
    path.write_text(_notebook(
        "!pip install torch \\\n    transformers \\\n  accelerate\nimport torch\nctx = torch.cuda.amp.autocast()\n",
    ))
    run = _amplint(tmp_path, "--output-format", "concise", "nb.ipynb")
    assert "AMP000" not in run.stdout
    assert "nb.ipynb:cell 1:5:7: AMP001" in run.stdout
    _amplint(tmp_path, "--fix", "nb.ipynb")
    (cell,) = nbformat.reads(path.read_text(), as_version=4).cells
    assert cell.source.startswith("!pip install torch \\\n    transformers \\\n  accelerate\nimport torch\n")
    assert "torch.amp.autocast(\"cuda\")" in cell.source


def test_a_package_manager_magic_without_a_percent_sign_is_ipython_not_a_syntax_error(tmp_path):
    # IPython's automagic (on by default) runs ``pip install x`` as ``%pip install x``.
    path = tmp_path / "nb.ipynb"
    path.write_text(_notebook("pip install accelerate peft\n", "import torch\nscaler = torch.cuda.amp.GradScaler()\n",
                              "pip = 3\nprint(pip)\n"))
    run = _amplint(tmp_path, "--output-format", "concise", "nb.ipynb")
    assert "AMP000" not in run.stdout
    assert "nb.ipynb:cell 2:2:" in run.stdout and " AMP001 " in run.stdout
    _amplint(tmp_path, "--fix", "nb.ipynb")
    cells = [c.source for c in nbformat.reads(path.read_text(), as_version=4).cells]
    assert cells[0] == "pip install accelerate peft\n" and cells[2] == "pip = 3\nprint(pip)\n"
    assert 'torch.amp.GradScaler("cuda")' in cells[1]


def test_an_indented_cell_is_dedented_as_ipython_runs_it(tmp_path):
    # IPython drops a cell's leading blank lines and takes the first line's indentation off every
    # line that starts with it: `` !tts ...`` and a pasted indented block both run.
    path = tmp_path / "nb.ipynb"
    path.write_text(_notebook(
        ' !tts --text "hello" \\\n      --out_path out.wav\n',
        "\n  import torch\n  ctx = torch.cuda.amp.autocast()\n  note = '''\nkept as it is\n'''\n",
        "import torch\n  x = 1\n",  # the first line is not indented: IPython does not dedent this one
    ))
    run = _amplint(tmp_path, "--output-format", "concise", "nb.ipynb")
    assert "cell 1" not in run.stdout and "cell 2:3:9: AMP001" in run.stdout, run.stdout
    assert "nb.ipynb:cell 3:2:" in run.stdout and "AMP000" in run.stdout  # a real unexpected indent
    _amplint(tmp_path, "--fix", "nb.ipynb")
    cells = [c.source for c in nbformat.reads(path.read_text(), as_version=4).cells]
    assert cells[0] == ' !tts --text "hello" \\\n      --out_path out.wav\n'
    assert cells[1] == "\n  import torch\n  ctx = torch.amp.autocast(\"cuda\")\n  note = '''\nkept as it is\n'''\n"
    assert cells[2] == "import torch\n  x = 1\n"


def test_lines_a_fix_adds_to_an_indented_cell_get_its_indentation():
    from amplint.notebook import CodeCell, _python_lines, _reindent

    cell = CodeCell(1, ["  scaler = make()\n", "  for x in data:\n", "      step(x)\n"])
    lines, cell.magics = _python_lines(cell)
    assert lines == ["scaler = make()\n", "for x in data:\n", "    step(x)\n"]
    fixed = ["scaler = make()\n", "for x in data:\n", "    step(x)\n", "    scaler.update()\n", "\n"]
    assert _reindent(fixed, cell) == [*cell.source, "      scaler.update()\n", "\n"]
