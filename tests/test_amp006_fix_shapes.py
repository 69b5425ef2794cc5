"""AMP006 fix shapes: key style, quote style, layout of multi-line dicts, the load-side guard."""

from __future__ import annotations

import libcst as cst

from amplint.semantic import syntax as S
from amplint.engine import lint_text
from amplint.rules.amp006_scaler_state_not_checkpointed import _styled_key
from amplint.settings import Settings

SETTINGS = Settings(select=("AMP006",))


def _fixed(code: str) -> str:
    result = lint_text(code, "t.py", SETTINGS, fix=True)
    return result.source


def test_styled_key():
    assert _styled_key("optimizer") == "scaler"
    assert _styled_key("optimizer_state_dict") == "scaler_state_dict"
    assert _styled_key("optim_state") == "scaler_state"
    assert _styled_key(None) == "scaler"


def test_dict_items_reads_literals_and_dict_calls():
    items = S.dict_items(cst.parse_expression("{'a': 1, **rest}"))
    assert [k for k, _, _ in items] == ["a", "**"]
    items = S.dict_items(cst.parse_expression("dict(model=m, **extra)"))
    assert [k for k, _, _ in items] == ["model", "**"]
    assert S.dict_items(cst.parse_expression("make_dict()")) is None


def test_multiline_dict_without_trailing_comma_keeps_layout():
    code = (
        "import torch\nscaler = torch.amp.GradScaler('cuda')\n"
        "torch.save({\n    'model': model.state_dict(),\n    'optimizer': optimizer.state_dict()\n}, path)\n"
    )
    assert _fixed(code) == (
        "import torch\nscaler = torch.amp.GradScaler('cuda')\n"
        "torch.save({\n    'model': model.state_dict(),\n    'optimizer': optimizer.state_dict(),\n"
        "    'scaler': scaler.state_dict()\n}, path)\n"
    )


def test_single_entry_dict():
    code = "import torch\nscaler = torch.amp.GradScaler('cuda')\ntorch.save({'optimizer_state': opt.state_dict()}, p)\n"
    assert _fixed(code).endswith("torch.save({'optimizer_state': opt.state_dict(), 'scaler_state': scaler.state_dict()}, p)\n")


def test_repeated_saves_of_one_dict_report_once():
    code = (
        "import torch\ndef f(model, optimizer, path):\n    scaler = torch.amp.GradScaler('cuda')\n"
        "    ckpt = {'model': model.state_dict(), 'optimizer': optimizer.state_dict()}\n"
        "    torch.save(ckpt, path)\n    torch.save(ckpt, path + '.best')\n"
    )
    assert len(lint_text(code, "t.py", SETTINGS).findings) == 1


def test_load_guard_is_after_the_optimizer_load_and_converges():
    code = (
        "import torch\ndef resume(path, model, optimizer):\n    scaler = torch.amp.GradScaler('cuda')\n"
        "    ckpt = torch.load(path)\n    optimizer.load_state_dict(ckpt['optimizer'])\n    model.load_state_dict(ckpt['model'])\n"
    )
    fixed = _fixed(code)
    assert (
        "    optimizer.load_state_dict(ckpt['optimizer'])\n    if 'scaler' in ckpt:\n"
        "        scaler.load_state_dict(ckpt['scaler'])\n    model.load_state_dict(ckpt['model'])\n"
    ) in fixed
    assert _fixed(fixed) == fixed


_TRAINER_WITH_HELPER = '''\
import torch


def save_checkpoint(model, optimizer, path, scaler=None):
    state = {{"model": model.state_dict(), "optimizer": optimizer.state_dict()}}
    if scaler is not None:
        state["scaler"] = scaler.state_dict()
    torch.save(state, path)


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
{init}
{setup}
    def save(self, path):
{save}
'''


def _helper_findings(init: str = "", setup: str = "", save: str = "        save_checkpoint(self.model, self.optimizer, path)\n"):
    code = _TRAINER_WITH_HELPER.format(init=init, setup=setup, save=save)
    return code, lint_text(code, "t.py", SETTINGS).findings


def test_a_scaler_set_in_init_is_passed_to_the_helper():
    code, found = _helper_findings(init="        self.scaler = torch.amp.GradScaler('cuda')\n")
    assert [v.code for v in found] == ["AMP006"]
    assert "save_checkpoint(self.model, self.optimizer, path, scaler=self.scaler)" in _fixed(code)


def test_no_fix_when_the_scaler_is_set_by_another_method():
    # ``save`` may run before ``setup_amp``: ``self.scaler`` would not exist yet.
    code, found = _helper_findings(setup="    def setup_amp(self):\n        self.scaler = torch.amp.GradScaler('cuda')\n\n")
    assert [v.code for v in found] == ["AMP006"]
    assert _fixed(code) == code


def test_a_scaler_set_earlier_in_the_same_method_is_passed():
    save = "        self.scaler = torch.amp.GradScaler('cuda')\n        save_checkpoint(self.model, self.optimizer, path)\n"
    code, found = _helper_findings(save=save)
    assert [v.code for v in found] == ["AMP006"]
    assert "scaler=self.scaler)" in _fixed(code)


def test_no_fix_when_the_scaler_is_set_only_on_some_paths_before_the_call():
    save = ("        if torch.cuda.is_available():\n            self.scaler = torch.amp.GradScaler('cuda')\n"
            "        save_checkpoint(self.model, self.optimizer, path)\n")
    code, found = _helper_findings(save=save)
    assert [v.code for v in found] == ["AMP006"]
    assert _fixed(code) == code


_RESUMING_TRAINER = '''\
import torch


class Trainer:
    def __init__(self, model, args):
        self.model = model
        self.args = args
        self.optimizer = torch.optim.AdamW(model.parameters())
{init}        self.init_checkpoint(args.path)

    def init_checkpoint(self, path):
        ckpt = torch.load(path)
        self.model.load_state_dict(ckpt["model"])
        if self.args.resume:
            self.optimizer.load_state_dict(ckpt["optimizer_state_dict"])

    def train(self, loader):
{train}        for x in loader:
            with torch.autocast("cuda"):
                loss = self.model(x).mean()
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
'''


def test_the_restore_fix_reads_a_scaler_built_before_the_resume_runs():
    code = _RESUMING_TRAINER.format(init="        self.scaler = torch.amp.GradScaler(\"cuda\")\n", train="")
    assert _fixed(code) == code.replace(
        '            self.optimizer.load_state_dict(ckpt["optimizer_state_dict"])\n',
        '            self.optimizer.load_state_dict(ckpt["optimizer_state_dict"])\n'
        '            if "scaler_state_dict" in ckpt:\n'
        '                self.scaler.load_state_dict(ckpt["scaler_state_dict"])\n',
    )


def test_no_restore_fix_for_a_scaler_built_after_the_resume():
    # SAM-Med3D's shape: __init__ resumes, train() builds the scaler later (and would replace a
    # restored one); an inserted self.scaler.load_state_dict would raise AttributeError.
    code = _RESUMING_TRAINER.format(init="", train="        self.scaler = torch.amp.GradScaler(\"cuda\")\n")
    (finding,) = lint_text(code, "t.py", SETTINGS).findings
    assert finding.fix is None and "is set in `train` (line 18)" in finding.no_fix_reason
    assert _fixed(code) == code
    # __init__ builds it, but only after the call that resumes
    late = code.replace('        self.init_checkpoint(args.path)\n',
                        '        self.init_checkpoint(args.path)\n        self.scaler = torch.amp.GradScaler("cuda")\n')
    late = late.replace('        self.scaler = torch.amp.GradScaler("cuda")\n        for x', '        for x')
    (finding,) = lint_text(late, "t.py", SETTINGS).findings
    assert finding.fix is None and "before it sets `self.scaler`" in finding.no_fix_reason
    # built in __init__ and again in train(): the restored state would be thrown away
    again = _RESUMING_TRAINER.format(init="        self.scaler = torch.amp.GradScaler(\"cuda\")\n",
                                     train="        self.scaler = torch.amp.GradScaler(\"cuda\")\n")
    (finding,) = lint_text(again, "t.py", SETTINGS).findings
    assert finding.fix is None and "built again in `train`" in finding.no_fix_reason


def test_the_restore_fix_stands_when_the_caller_builds_the_scaler_before_resuming():
    # ultralytics' shape: _setup_train builds self.scaler, then calls resume_training.
    code = _RESUMING_TRAINER.format(init="", train="").replace(
        "        self.init_checkpoint(args.path)\n", "").replace(
        "    def train(self, loader):\n",
        "    def setup(self, path):\n        self.scaler = torch.amp.GradScaler(\"cuda\")\n        self.init_checkpoint(path)\n\n"
        "    def train(self, loader):\n")
    fixed = _fixed(code)
    assert '                self.scaler.load_state_dict(ckpt["scaler_state_dict"])\n' in fixed
