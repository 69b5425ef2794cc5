"""Half-precision casts of modules and whether the module cast is the trained one."""

from __future__ import annotations

from textwrap import dedent

from amplint.amp import FileFacts


def _facts(code: str) -> FileFacts:
    return FileFacts.from_source(dedent(code), "train.py")


TRAIN = """\
    import torch
    model = Net().to(device).half().train()
    ema = Net().cuda().half()
    teacher = Net()
    teacher.requires_grad_(False)
    teacher.half()
    anchors = grid.half().float()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        x = x.to(device, torch.float16)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        with torch.no_grad():
            ema(x)
    model.to(dtype=torch.bfloat16)
"""


def test_half_casts_and_what_they_reach():
    facts = _facts(TRAIN)
    casts = {facts.code(c.call): c for c in facts.casts.half_casts}
    assert {k: c.dtype for k, c in casts.items()} == {
        "Net().to(device).half()": "float16",
        "Net().cuda().half()": "float16",
        "teacher.half()": "float16",
        "grid.half()": "float16",
        "x.to(device, torch.float16)": "float16",
        "model.to(dtype=torch.bfloat16)": "bfloat16",
    }
    assert facts.casts.cast_modules(casts["Net().to(device).half()"]) == ["model"]
    assert facts.casts.cast_modules(casts["x.to(device, torch.float16)"]) == ["x"]
    assert [facts.code(a) for a in casts["x.to(device, torch.float16)"].dtype_args] == ["torch.float16"]
    assert casts["grid.half()"].call in facts.casts.casts_undone
    assert facts.scaling.uses_amp


def test_trained_modules_and_training_after_the_cast():
    facts = _facts(TRAIN)
    casts = {facts.code(c.call): c for c in facts.casts.half_casts}
    first = casts["Net().to(device).half()"].ctx
    assert facts.casts.is_trained_module("model", first)
    assert not facts.casts.is_trained_module("ema", first)  # a copy, called under no_grad
    assert not facts.casts.is_trained_module("teacher", first)  # frozen
    assert not facts.casts.is_trained_module("x", first)  # an input
    assert facts.casts.training_after(first) is True
    assert facts.casts.training_after(casts["model.to(dtype=torch.bfloat16)"].ctx) is False


def test_inference_functions_and_passing_to_a_training_function():
    facts = _facts("""\
        import torch
        scaler = torch.amp.GradScaler("cuda")

        def train_one_epoch(net, loader, opt):
            for x in loader:
                scaler.scale(net(x)).backward()
                scaler.step(opt)
                scaler.update()

        def export_onnx(model):
            model.half()

        def main():
            model = Net().half()
            train_one_epoch(model, loader, opt)
    """)
    export, main = facts.casts.half_casts
    assert facts.casts.in_inference_function(export.ctx)
    assert not facts.casts.in_inference_function(main.ctx)
    assert facts.casts.is_trained_module("model", main.ctx)
    assert facts.casts.training_after(main.ctx) is True
    assert facts.scaling.definite_scaler_seen_from(main.ctx)


def test_hugging_face_half_loads_for_a_fp16_trainer():
    facts = _facts("""\
        import torch
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
        model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.float16)
        quantized = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.float16, load_in_8bit=True)
        args = TrainingArguments("out", fp16=True)
        Trainer(model=model, args=args).train()
    """)
    ((load, dtype_arg),) = facts.casts.half_precision_loads
    assert dtype_arg.keyword.value == "torch_dtype"
    assert facts.casts.trains_hf_in_fp16
    assert not facts.casts.uses_adapters_or_quantization
    assert facts.casts.trained_by_trainer("model", load.ctx)
    assert not facts.casts.trained_by_trainer("quantized", load.ctx)
