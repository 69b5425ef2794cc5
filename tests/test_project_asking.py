"""The project pass reads only what a file that asks needs: the modules its scaler-holding code
hands training state to, and nothing for any other file of the run."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest

from amplint.engine import Job, run_jobs
from amplint.project import phase
from amplint.project.asking import _TRAINING_STATE, _TrainingState, names_handed_training_state
from amplint.project.resolve import normalized
from amplint.project.summarize import calls_in
from amplint.settings import Settings

TRAIN = '''import torch

from helpers import save_checkpoint


def main(model, loader, epochs, output_dir):
    optimizer = torch.optim.AdamW(model.parameters())
    scaler = torch.amp.GradScaler("cuda")
    for epoch in range(epochs):
        for batch in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(batch)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        save_checkpoint(model, optimizer, epoch, output_dir)
'''

HELPERS = '''import os

import torch


def save_checkpoint(model, optimizer, epoch, output_dir):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, os.path.join(output_dir, "last.pt"))
'''

# Everything a summary records, in a module no file that holds a scaler imports.
MODELS = '''import torch


def build(model, optimizer, loss):
    model.half()
    model.to(torch.float16)
    loss.backward()
    optimizer.step()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, "m.pt")
'''

# Imports the models but holds no scaler: it asks nothing.
EVALUATE = '''import torch

import models


def evaluate(model, optimizer, batch):
    models.build(model, optimizer, model(batch).float())
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name, text in (("train.py", TRAIN), ("helpers.py", HELPERS), ("models.py", MODELS), ("evaluate.py", EVALUATE)):
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.fixture
def summarised(monkeypatch) -> list[str]:
    paths: list[str] = []
    summarize = phase.summarize_path

    def recording(path, cache_dir=None):
        paths.append(path)
        return summarize(path, cache_dir)

    monkeypatch.setattr(phase, "summarize_path", recording)
    return paths


def _run(root: Path, **settings) -> dict:
    options = Settings(select=("AMP006",), root=str(root), **settings)
    jobs = [Job(str(path), options, display=path.name) for path in sorted(root.glob("*.py"))]
    return {result.filename: result for result in run_jobs(jobs, 1)}


def test_only_the_helper_the_scaler_file_hands_its_state_to_is_summarised(project, summarised):
    results = _run(project)
    assert summarised == [normalized(project / "helpers.py")]
    (finding,) = results["train.py"].findings
    assert finding.location.row == 16 and "`save_checkpoint` in helpers.py" in finding.message
    assert results["models.py"].findings == [] and results["evaluate.py"].findings == []


def test_nothing_is_summarised_when_no_file_holds_a_scaler(project, summarised):
    (project / "train.py").write_text(TRAIN.replace('    scaler = torch.amp.GradScaler("cuda")\n', "").replace("scaler.", "opt_wrapper."))
    _run(project)
    assert summarised == []


def test_nothing_is_summarised_without_project_analysis(project, summarised):
    assert _run(project, project_analysis=False)["train.py"].findings == []
    assert summarised == []


def test_an_edited_helper_is_read_again_in_the_same_process(project):
    assert len(_run(project)["train.py"].findings) == 1
    (project / "helpers.py").write_text(HELPERS.replace(
        "def save_checkpoint(model, optimizer, epoch, output_dir):", "def save_checkpoint(model, optimizer, epoch, output_dir, scaler=None):",
    ).replace('"epoch": epoch}', '"epoch": epoch, "scaler": scaler.state_dict()}'))
    (finding,) = _run(project)["train.py"].findings
    assert "without its `scaler` argument" in finding.message


@pytest.mark.parametrize(("text", "handed"), [
    ("save(model, optimizer)", {"save"}),
    ("utils.save(ckpt_path)", {"utils"}),
    ("trainer.utils.save(optimizer)", {"trainer"}),  # ``utils`` is an attribute here, not a head
    ("x1.utils(optimizer)", set()),
    ("save (model)\n" + " " * 500 + "optimizer", set()),  # the state is out of the call's reach
    ("save(model, Optional[int])", set()),  # ``Opt`` of ``Optional`` is not ``opt``
    ("save(model, opt)", {"save"}),
    ("save(\u017fcaler)", {"save"}),  # the long s matches ``s`` case-insensitively
    ("mysave(optimizer); utils = 1", set()),
])
def test_an_import_is_followed_only_when_called_with_training_state(text, handed):
    assert names_handed_training_state(text, {"save", "utils", "trainer"}) == handed


def test_training_state_windows_answer_as_the_pattern_searched_in_each_window():
    pieces = ["opt", "OPT", "Optional", "optim", "ckpt", "cKpt", "checkpoint", "state_dict", "SCALER",
              "x", "_", "1", " ", ".", "(", "\u00e9", "\u0130", "\u0131", "\u017f", "\u212a", "\n", "o", "p", "t"]
    rng = random.Random(12)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 20)))
        state = _TrainingState(text)
        for _ in range(5):
            start = rng.randint(0, len(text) + 2)
            end = start + rng.randint(0, 10)
            assert state.within(start, end) == (_TRAINING_STATE.search(text, start, end) is not None), (text, start, end)


def test_calls_are_found_in_the_order_of_a_breadth_first_walk():
    source = (Path(__file__).resolve().parents[1] / "fixtures" / "projects" / "helper_ckpt" / "utils.py").read_text()
    source += "\nx = [f(g(y)) for y in h(z)] if k(lambda: m(n())) else {p(): q for q in r()}\n"
    tree = ast.parse(source)
    for node in (tree, *tree.body):
        assert calls_in(node) == [n for n in ast.walk(node) if isinstance(n, ast.Call)]


def test_imports_are_found_in_a_file_with_windows_line_endings():
    from amplint.project.imports import scan_imports

    # Fifty short lines first: each \r\n counted as one character would shift the later rows.
    text = "a = 1\r\n" * 50 + (
        "try:\r\n    from utils import save_checkpoint\r\nexcept ImportError:\r\n    pass\r\n"
        "from .helpers import (\r\n    resume,\r\n)\r\nimport torch\r\ndef f():\r\n    import os\r\n"
    )
    found = {(name.local, name.module) for name in scan_imports(text)}
    assert found == {("torch", "torch"), ("save_checkpoint", "utils"), ("resume", "helpers")}
    assert scan_imports(text) == scan_imports(text.replace("\r\n", "\n"))
