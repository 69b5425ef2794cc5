"""Write the notebook fixtures under fixtures/notebooks/ with nbformat, as Jupyter saves them.

Usage: python scripts/make_notebook_fixtures.py   (needs nbformat, in the dev extra)
"""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "notebooks"


def notebook(*cells) -> nbformat.NotebookNode:
    nb = new_notebook(cells=list(cells))
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.7"}
    return nb


TRAIN_WITH_OUTPUTS = notebook(
    new_markdown_cell("# Fine-tune a classifier with mixed precision"),
    new_code_cell("import torch\nfrom torch import nn\n\nmodel = nn.Linear(16, 2).cuda()\noptimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)",
                  execution_count=1),
    new_code_cell(
        "scaler = torch.cuda.amp.GradScaler()  # expect: AMP001\n"
        "for step, (x, y) in enumerate(loader):\n"
        "    optimizer.zero_grad(set_to_none=True)\n"
        "    with torch.cuda.amp.autocast():  # expect: AMP001\n"
        "        loss = nn.functional.cross_entropy(model(x.cuda()), y.cuda())\n"
        "    scaler.scale(loss).backward()\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: AMP003\n"
        "    scaler.step(optimizer)\n"
        "    scaler.update()\n"
        "    if step % 100 == 0:\n"
        "        print(step, loss.item())",
        execution_count=2,
        outputs=[new_output("stream", name="stdout", text="0 0.71\n100 0.42\n"),
                 new_output("execute_result", data={"text/plain": "tensor(0.4200)"}, execution_count=2)],
    ),
    new_markdown_cell("Save for later."),
    new_code_cell('torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, "ckpt.pt")  # expect: AMP006',
                  execution_count=3),
)

MAGICS = notebook(
    new_code_cell("%load_ext autoreload\n%autoreload 2\n!pip install -q timm\nimport torch\nfrom torch.cuda.amp import autocast"),
    new_code_cell("%%bash\nnvidia-smi\necho done"),
    new_code_cell("%%time\nfiles = !ls data\nmodel?\nwith autocast():  # expect: AMP001\n    out = model(batch)"),
    new_code_cell("def show(x):\n    %matplotlib inline\n    return x"),
)

CLEAN = notebook(
    new_markdown_cell("Uses the current API."),
    new_code_cell("import torch\nscaler = torch.amp.GradScaler('cuda')\nwith torch.autocast('cuda', dtype=torch.float16):\n    loss = model(x)"),
)

if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    for name, nb in (("train_with_outputs", TRAIN_WITH_OUTPUTS), ("magics", MAGICS), ("clean", CLEAN)):
        nbformat.validate(nb)
        nbformat.write(nb, str(OUT / f"{name}.ipynb"))
        print(OUT / f"{name}.ipynb")
