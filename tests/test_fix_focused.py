"""Check and fix mode lint the same, focused text; a fix made there is carried back to the file.

A definition no rule needs is blank lines in the focused text. A fix pass renders the focused
module and its changed lines are changed in the file; a change that touches a blanked line is
never carried over (the pass is linted from the whole text instead), so a fix cannot drop or
move code the focused parse did not see.
"""

from __future__ import annotations

import amplint.engine as engine
import amplint.fix.focused as focused
from amplint.engine import fix_source
from amplint.fix.focused import unfocus
from amplint.settings import Settings

TRAINER = '''\
import torch
from torch.cuda.amp import GradScaler, autocast


def build_model(width):
    layers = [torch.nn.Linear(width, width) for _ in range(4)]
    return torch.nn.Sequential(*layers)


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.scaler = GradScaler()

    def describe(self):
        return f"{len(list(self.model.parameters()))} tensors"

    def train_step(self, batch):
        with autocast():
            loss = self.model(batch).sum()
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad()
'''

FIXED = TRAINER.replace(
    "from torch.cuda.amp import GradScaler, autocast", "from torch.amp import GradScaler, autocast"
).replace("GradScaler()", 'GradScaler("cuda")').replace("with autocast():", 'with autocast("cuda"):')


def _focus_of_each_lint(monkeypatch) -> list[bool]:
    seen: list[bool] = []
    real = engine._lint_once

    def recording(*args, focus=False, **kwargs):
        seen.append(focus)
        return real(*args, focus=focus, **kwargs)

    monkeypatch.setattr(engine, "_lint_once", recording)
    return seen


def test_the_focused_text_blanks_the_definitions_no_rule_needs():
    settings = Settings()
    lint = engine._lint_once(TRAINER, "train.py", settings, settings.enabled_codes("train.py"), focus=True)
    assert "def build_model" not in lint.parsed_text and "def describe" not in lint.parsed_text
    assert lint.parsed_text.count("\n") == TRAINER.count("\n")


def test_fix_mode_lints_the_focused_text_and_keeps_the_blanked_definitions(monkeypatch):
    seen = _focus_of_each_lint(monkeypatch)
    assert fix_source(TRAINER, "train.py") == FIXED
    assert seen and all(seen)  # every pass, and the final lint, read the focused text


def test_the_fix_is_the_same_as_from_the_whole_text():
    assert fix_source(TRAINER, "train.py", Settings(prefilter=True)) == fix_source(TRAINER, "train.py", Settings(prefilter=False))


def test_a_pass_whose_change_cannot_be_carried_is_linted_from_the_whole_text(monkeypatch):
    seen = _focus_of_each_lint(monkeypatch)
    monkeypatch.setattr(focused, "unfocus", lambda original, old, new: None)
    assert fix_source(TRAINER, "train.py") == FIXED
    assert False in seen  # the whole text was linted for the pass that could not be carried


def test_unfocus_changes_only_the_lines_the_fix_changed():
    original = "import a\ndef helper():\n    return 1\nx = a.f()\n"
    focused_text = "import a\n\n\nx = a.f()\n"
    fixed = "import a\n\n\nx = a.g()\n"
    assert unfocus(original, focused_text, fixed) == "import a\ndef helper():\n    return 1\nx = a.g()\n"


def test_unfocus_refuses_a_change_that_touches_a_blanked_line():
    original = "import a\ndef helper():\n    return 1\nx = a.f()\n"
    focused_text = "import a\n\n\nx = a.f()\n"
    assert unfocus(original, focused_text, "import a\n\nx = a.f()\n") is None  # a blank line deleted
    assert unfocus(original, focused_text, "import a\nimport b\n\nx = a.f()\n") is None  # one replaced


def test_unfocus_refuses_an_insertion_beside_a_blanked_line():
    original = "import a\ndef helper():\n    return 1\nx = a.f()\n"
    focused_text = "import a\n\n\nx = a.f()\n"
    assert unfocus(original, focused_text, "import a\n\ny = 2\n\nx = a.f()\n") is None


def test_unfocus_carries_an_insertion_between_the_files_own_lines():
    original = "import a\ndef helper():\n    return 1\nx = a.f()\ny = 3\n"
    focused_text = "import a\n\n\nx = a.f()\ny = 3\n"
    fixed = "import a\n\n\nx = a.f()\nz = 0\ny = 3\n"
    assert unfocus(original, focused_text, fixed) == "import a\ndef helper():\n    return 1\nx = a.f()\nz = 0\ny = 3\n"


def test_unfocus_refuses_texts_that_do_not_line_up():
    assert unfocus("a = 1\nb = 2\n", "a = 1\n", "a = 2\n") is None


def test_unfocus_keeps_crlf_lines_of_the_file():
    original = "import a\r\ndef helper():\r\n    return 1\r\nx = a.f()\r\n"
    focused_text = "import a\r\n\r\n\r\nx = a.f()\r\n"
    fixed = "import a\r\n\r\n\r\nx = a.g()\r\n"
    assert unfocus(original, focused_text, fixed) == "import a\r\ndef helper():\r\n    return 1\r\nx = a.g()\r\n"
