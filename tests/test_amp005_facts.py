"""Facts added for AMP005: gradient-free regions, modules given to optimizers, frozen modules."""

from __future__ import annotations


from amplint.engine import lint_text
from amplint.amp import FileFacts
from amplint.settings import Settings


def _facts(code: str) -> FileFacts:
    return FileFacts.from_source(code, "t.py")


def test_in_no_grad_with_decorator_and_inference_mode():
    facts = _facts(
        "import torch\n"
        "@torch.no_grad()\ndef ev(m, x):\n    return m(x)\n"
        "def tr(m, x):\n    with torch.inference_mode():\n        a = m(x)\n"
        "    with torch.set_grad_enabled(False):\n        b = m(x)\n    return m(x)\n"
    )
    calls = {facts.position(s.node).start.line: facts.models.in_no_grad(s.ctx) for s in facts.calls if s.func_text == "m"}
    assert calls == {4: True, 7: True, 9: True, 10: False}


def test_optimized_modules_forms():
    facts = _facts(
        "import torch\n"
        "opt1 = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "opt2 = torch.optim.AdamW([{'params': head.parameters()}, {'params': self.body.parameters(), 'lr': 1}])\n"
        "params = filter(lambda p: p.requires_grad, enc.parameters())\nopt3 = torch.optim.Adam(params)\n"
        "opt4 = create_optimizer_v2(net, 'adamw', lr=1e-3)\n"
    )
    assert {key for key, _ in facts.optim.optimized_modules} == {"model", "head", "self.body", "enc", "net"}


def test_frozen_modules():
    facts = _facts(
        "teacher.requires_grad_(False)\nvae.eval()\nmodel.eval()\nmodel.train()\n"
        "for p in encoder.parameters():\n    p.requires_grad = False\n"
    )
    assert facts.models.frozen_modules == {"teacher", "vae", "encoder"}


def test_cast_alone_in_block_becomes_pass():
    code = (
        "import torch\nmodel = Net()\nif flag:\n    model.half()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nscaler = torch.amp.GradScaler('cuda')\n"
    )
    result = lint_text(code, "t.py", Settings(select=("AMP005",)), fix=True, unsafe=True)
    assert result.source == code.replace("    model.half()\n", "    pass\n")


def test_cast_after_training_is_not_reported():
    code = (
        "import torch\nmodel = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "scaler = torch.amp.GradScaler('cuda')\nfor x in data:\n    with torch.autocast('cuda'):\n"
        "        loss = model(x).sum()\n    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n"
        "model.half()\ntorch.save(model.state_dict(), 'fp16.pt')\n"
    )
    assert lint_text(code, "t.py", Settings(select=("AMP005",))).findings == []
