"""AMP024-AMP026 keep files without their words out of the parse (their ``triggers``,
``requires`` and ``requires_match``), and a file that has them reaches the rule."""

from __future__ import annotations

import pytest

from amplint.engine import may_have_findings
from amplint.selection import rules_to_run
from amplint.settings import Settings

CASES = {
    "AMP024": (
        # An Accelerate script with no manual scaler or autocast.
        b"from accelerate import Accelerator\naccelerator = Accelerator(mixed_precision='fp16')\n"
        b"model, optimizer = accelerator.prepare(model, optimizer)\naccelerator.backward(loss)\n",
        b"scaler.scale(loss).backward()\nscaler.step(optimizer)\n",
    ),
    "AMP025": (
        b"import torch\n@torch.no_grad()\ndef evaluate(model, x):\n    return model(x)\n",
        b"def export(model):\n    scaler = torch.amp.GradScaler('cuda')\n",
    ),
    "AMP026": (
        b"import torch\nfrom torch.distributed.fsdp import MixedPrecision\n"
        b"policy = MixedPrecision(param_dtype=torch.float16)\n",
        b"loss.backward()\n",
    ),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_a_file_without_the_rules_words_is_skipped_and_one_with_them_is_not(code):
    settings = Settings(select=(code,))
    without, added = CASES[code]
    assert not may_have_findings(without, settings, "a.py")
    assert rules_to_run(without.decode(), settings, frozenset({code})) == ()
    with_them = without + added
    assert may_have_findings(with_them, settings, "a.py")
    assert [rule.code for rule in rules_to_run(with_them.decode(), settings, frozenset({code}))] == [code]
