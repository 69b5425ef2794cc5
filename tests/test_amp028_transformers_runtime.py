"""Runtime truth for AMP028 with the real transformers (the ``frameworks`` extra; skipped without it).

A small GPT-2 is saved, loaded back with ``torch_dtype=torch.bfloat16`` and trained ten steps by
the ``Trainer`` with ``bf16=True`` on the CPU: most weights never change, since each AdamW update
(about the learning rate, 1e-5) is below half a bfloat16 step of the weight and rounds away. The
same script loading float32 weights, as the fix writes it, changes nearly all of them.
"""

from __future__ import annotations

import pytest

from amplint.api import fix_source, lint_source

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")
pytest.importorskip("transformers", reason="the frameworks extra (transformers) is not installed")

SCRIPT = """\
import torch
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments


def train(checkpoint, output_dir, dataset):
    model = AutoModelForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.bfloat16)
    before = {name: p.detach().float().clone() for name, p in model.named_parameters()}
    args = TrainingArguments(
        output_dir=output_dir, use_cpu=True, bf16=True, learning_rate=1e-5, max_steps=10,
        per_device_train_batch_size=4, report_to=[], save_strategy="no", logging_strategy="no",
        disable_tqdm=True,
    )
    Trainer(model=model, args=args, train_dataset=dataset).train()
    changed = sum(int((p.detach().float() != before[name]).sum()) for name, p in model.named_parameters())
    return changed / sum(p.numel() for p in model.parameters())
"""


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    directory = tmp_path_factory.mktemp("tiny-gpt2")
    config = GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=64, n_positions=16)
    GPT2LMHeadModel(config).save_pretrained(directory)
    return directory


def _changed_fraction(source: str, checkpoint, output_dir) -> float:
    namespace: dict = {}
    exec(compile(source, "<script>", "exec"), namespace)
    generator = torch.Generator().manual_seed(0)
    dataset = [
        {"input_ids": torch.randint(0, 64, (16,), generator=generator),
         "labels": torch.randint(0, 64, (16,), generator=generator)}
        for _ in range(40)
    ]
    return namespace["train"](str(checkpoint), str(output_dir), dataset)


def test_bfloat16_weights_lose_their_updates_and_amplint_reports_it(checkpoint, tmp_path):
    assert [f.code for f in lint_source(SCRIPT, settings={"select": ["AMP028"]})] == ["AMP028"]
    assert _changed_fraction(SCRIPT, checkpoint, tmp_path) < 0.5


def test_the_fixed_script_updates_its_weights_and_amplint_is_silent(checkpoint, tmp_path):
    fixed = fix_source(SCRIPT, settings={"select": ["AMP028"]}, unsafe=True)
    assert "torch_dtype=torch.float32" in fixed and fixed.count("\n") == SCRIPT.count("\n")
    assert lint_source(fixed, settings={"select": ["AMP028"]}) == []
    assert _changed_fraction(fixed, checkpoint, tmp_path) > 0.95
