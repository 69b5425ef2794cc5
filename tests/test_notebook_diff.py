"""``--diff`` on a notebook prints a source diff per changed code cell, as ruff does, not a diff
of the JSON text; Python files keep their ``git apply`` diff."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent.parent / "fixtures" / "notebooks"

TRAIN_DIFF = """\
--- train.ipynb:cell 3
+++ train.ipynb:cell 3
@@ -1,9 +1,10 @@
-scaler = torch.cuda.amp.GradScaler()  # expect: AMP001
+scaler = torch.amp.GradScaler("cuda")  # expect: AMP001
 for step, (x, y) in enumerate(loader):
     optimizer.zero_grad(set_to_none=True)
-    with torch.cuda.amp.autocast():  # expect: AMP001
+    with torch.amp.autocast("cuda"):  # expect: AMP001
         loss = nn.functional.cross_entropy(model(x.cuda()), y.cuda())
     scaler.scale(loss).backward()
+    scaler.unscale_(optimizer)
     torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: AMP003
     scaler.step(optimizer)
     scaler.update()
--- train.ipynb:cell 5
+++ train.ipynb:cell 5
@@ -1 +1 @@
-torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, "ckpt.pt")  # expect: AMP006
+torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scaler": scaler.state_dict()}, "ckpt.pt")  # expect: AMP006
"""


def test_a_notebook_diff_is_one_source_diff_per_changed_cell(cli, tmp_path):
    shutil.copy(NOTEBOOKS / "train_with_outputs.ipynb", tmp_path / "train.ipynb")
    before = (tmp_path / "train.ipynb").read_bytes()
    run = cli("check", "--no-cache", "--diff", "train.ipynb")
    assert run.exit_code == 1
    # Cell 2 lacks a final newline and is unchanged: it gets no header (ruff prints an empty one).
    assert run.stdout == TRAIN_DIFF
    assert "Would fix 4 errors." in run.stderr
    assert (tmp_path / "train.ipynb").read_bytes() == before


def test_magics_are_shown_as_written_and_files_are_apart(cli, tmp_path):
    shutil.copy(NOTEBOOKS / "magics.ipynb", tmp_path / "magics.ipynb")
    (tmp_path / "a.py").write_text("import torch\nwith torch.cuda.amp.autocast():\n    pass\n")
    out = cli("check", "--no-cache", "--diff", "a.py", "magics.ipynb").stdout
    python, notebook = out.split("\n\n")
    assert python.startswith("--- a.py\n+++ a.py\n@@ -1,3 +1,3 @@\n")
    assert notebook.startswith("--- magics.ipynb:cell 1\n+++ magics.ipynb:cell 1\n")
    assert "\n %%time\n files = !ls data\n model?\n-with autocast():  # expect: AMP001\n" in notebook
    assert '"source"' not in out and "\\n" not in out


def test_cells_numbered_among_all_cells_and_controls_shown(tmp_path):
    from amplint.report.diff import notebook_diff

    def notebook(code: str) -> str:
        cells = [{"cell_type": "markdown", "metadata": {}, "source": "x"},
                 {"cell_type": "code", "metadata": {}, "outputs": [], "source": code}]
        return json.dumps({"cells": cells, "metadata": {}}, indent=1)

    diff = notebook_diff("n.ipynb", notebook("a = '\x1b[2J'\nb = 1"), notebook("a = '\x1b[2J'\nb = 2"))
    assert diff == "--- n.ipynb:cell 2\n+++ n.ipynb:cell 2\n@@ -1,2 +1,2 @@\n a = '\u241b[2J'\n-b = 1\n+b = 2\n"
    assert notebook_diff("n.ipynb", notebook("b = 1"), notebook("b = 1\n")) == ""
