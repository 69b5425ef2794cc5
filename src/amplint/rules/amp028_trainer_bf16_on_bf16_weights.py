from __future__ import annotations

from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.fix import Fix, NoFix
import amplint.fix.edits as E
from amplint.model import FixSafety, Severity
from amplint.rules.base import Invalid, Rule, Violation
import amplint.semantic.syntax as S

# Sharded training keeps float32 parameters whatever the load dtype: Accelerate upcasts FSDP's
# low-precision parameters when mixed precision is on (accelerate 1.16.0 accelerator.py:1960-2017)
# and DeepSpeed's bf16 optimizer holds float32 master weights.
_SHARDING_ARGUMENTS = ("deepspeed", "fsdp", "fsdp_config")


class TrainerBf16OnBf16Weights(Rule):
    """
    ## What it does
    Finds a Hugging Face model loaded with `torch_dtype=torch.bfloat16` (or `dtype=`, or the
    string `"bfloat16"`) and handed, in the same file, to a `Trainer` (any `...Trainer`, such as
    TRL's `SFTTrainer`) whose `args` are a `TrainingArguments(bf16=True)` (or a TRL
    `...Config(bf16=True)`) built there with a literal `True`.

    Not reported: a quantized load (`load_in_4bit`, `load_in_8bit`, `quantization_config`), a
    function that trains adapters (`get_peft_model`, `LoraConfig`, `PeftModel` where the model is
    loaded or handed to the Trainer, a `peft_config=` given to the Trainer), training arguments that shard with DeepSpeed or FSDP (both keep
    float32 parameters), arguments that are not built in the file, and a model cast back with
    `model.float()` or `model.to(torch.float32)`.

    ## Why is this bad?
    `bf16=True` is mixed precision: the Trainer runs the forward under `torch.autocast` with
    bfloat16 and expects float32 parameters, which the optimizer updates in float32. A model
    loaded in bfloat16 has no float32 copy: autocast has nothing to cast, and the optimizer adds
    each update to a bfloat16 weight, which keeps 8 bits of mantissa. An update smaller than
    about 1/256 of the weight rounds away. With fine-tuning learning rates (1e-5 to 1e-4) most
    updates are that small, so most weights never change and the loss stalls or creeps, with no
    error or warning.

    On the CPU with transformers 5.25.0, ten steps of a small GPT-2 at `learning_rate=1e-5`
    change 19% of the weights when it is loaded in bfloat16 and 99.8% when it is loaded in
    float32 (`tests/test_amp028_transformers_runtime.py`).

    ## Example
    ```python
    import torch
    from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

    model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.bfloat16)
    args = TrainingArguments("out", bf16=True, learning_rate=2e-5)
    Trainer(model=model, args=args, train_dataset=train).train()
    ```

    ## Use instead
    ```python
    import torch
    from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

    model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.float32)
    args = TrainingArguments("out", bf16=True, learning_rate=2e-5)
    Trainer(model=model, args=args, train_dataset=train).train()
    ```

    ## Fix safety
    The fix loads the model in float32 (`torch.bfloat16` becomes `torch.float32`). It is unsafe:
    the weights then take twice the memory, which may not fit, and some recipes train in pure
    bfloat16 on purpose (with an optimizer that compensates for the rounding). Removing the
    argument would not do: from transformers 5 `from_pretrained` loads a checkpoint in the
    dtype it was saved in (`dtype="auto"` by default), which is often bfloat16.

    ## References
    - [Trainer: mixed precision](https://huggingface.co/docs/transformers/perf_train_gpu_one#mixed-precision-training)
    - transformers 5.25.0 `src/transformers/modeling_utils.py:4082-4090` (`dtype` defaults to
      `"auto"`), `src/transformers/training_args.py:2093-2100` (`bf16=True` sets Accelerate's
      mixed precision to `"bf16"`)
    - accelerate 1.16.0 `src/accelerate/accelerator.py:1792-1801` (the forward wrapped in
      autocast), 1960-2017 (FSDP upcasts low-precision parameters)
    """

    code = "AMP028"
    name = "trainer-bf16-on-bf16-weights"
    summary = "a model loaded in bfloat16 and trained with `TrainingArguments(bf16=True)`: no float32 weights, small updates are lost"
    severity = Severity.WARNING
    fix_safety = FixSafety.UNSAFE
    fix_withheld = "when the dtype is a bare imported name (`from torch import bfloat16`)"
    # The model comes from ``from_pretrained``, the precision from a ``...Trainer``'s arguments.
    triggers = ("from_pretrained",)
    requires = ("Trainer", "bf16", "bfloat16")

    valid = (
        dedent("""\
        import torch
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
        model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.float32)
        args = TrainingArguments("out", bf16=True)
        Trainer(model=model, args=args).train()
        """),
        # The arguments come from the command line: bf16 may be off.
        dedent("""\
        import torch
        from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments
        (args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
        model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.bfloat16)
        Trainer(model=model, args=args).train()
        """),
        # LoRA trains float32 adapters on a frozen bfloat16 base.
        dedent("""\
        import torch
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
        model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.bfloat16)
        model = get_peft_model(model, LoraConfig(r=8))
        Trainer(model=model, args=TrainingArguments("out", bf16=True)).train()
        """),
        # DeepSpeed keeps float32 master weights.
        dedent("""\
        import torch
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
        model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.bfloat16)
        args = TrainingArguments("out", bf16=True, deepspeed="ds_config.json")
        Trainer(model=model, args=args).train()
        """),
        # Evaluation only: the model is not trained.
        dedent("""\
        import torch
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
        model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.bfloat16)
        other = AutoModelForCausalLM.from_pretrained("gpt2")
        Trainer(model=other, args=TrainingArguments("out", bf16=True)).train()
        """),
        dedent("""\
        import torch
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
        model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.bfloat16)
        model = model.float()
        Trainer(model=model, args=TrainingArguments("out", bf16=True)).train()
        """),
    )
    invalid = (
        Invalid(
            dedent("""\
            import torch
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.bfloat16)
            args = TrainingArguments("out", bf16=True, learning_rate=2e-5)
            Trainer(model=model, args=args).train()
            """),
            fixed=dedent("""\
            import torch
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.float32)
            args = TrainingArguments("out", bf16=True, learning_rate=2e-5)
            Trainer(model=model, args=args).train()
            """),
            unsafe=True,
        ),
        Invalid(
            dedent("""\
            from transformers import AutoModelForCausalLM
            from trl import SFTConfig, SFTTrainer

            def main(dataset):
                model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B", dtype="bfloat16")
                trainer = SFTTrainer(model, args=SFTConfig(output_dir="out", bf16=True), train_dataset=dataset)
                trainer.train()
            """),
            fixed=dedent("""\
            from transformers import AutoModelForCausalLM
            from trl import SFTConfig, SFTTrainer

            def main(dataset):
                model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B", dtype="float32")
                trainer = SFTTrainer(model, args=SFTConfig(output_dir="out", bf16=True), train_dataset=dataset)
                trainer.train()
            """),
            unsafe=True,
        ),
        # A bare imported dtype name: the fix would need `torch` imported to spell float32.
        dedent("""\
            from torch import bfloat16
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

            model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=bfloat16)
            Trainer(model=model, args=TrainingArguments(output_dir="out", bf16=True), train_dataset=data).train()
        """),
    )

    def check(self) -> Iterator[Violation]:
        casts = self.facts.casts
        for site, dtype_arg in casts.bfloat16_loads:
            target = self.facts.statements.assigned_name(site)
            trainer = casts.trainer_receiving(target, site.ctx) if target is not None else None
            if trainer is None or S.keyword_arg(trainer.node, "peft_config") is not None:
                continue
            # Adapters are judged where the model is loaded and trained: a file often holds a LoRA
            # run and a full fine-tuning baseline in two functions.
            if casts.adapters_or_quantization_in(site.ctx.scope) or casts.adapters_or_quantization_in(trainer.ctx.scope):
                continue
            arguments = casts.training_arguments_of(trainer)
            if arguments is None or S.bool_value(S.keyword_arg_value(arguments, "bf16")) is not True:
                continue
            if any(_given(arguments, name) for name in _SHARDING_ARGUMENTS) or self._cast_back(target):
                continue
            keyword = dtype_arg.keyword.value  # type: ignore[union-attr]
            message = (
                f"The model `{target}` is loaded in bfloat16 (`{keyword}=...`) and trained with `bf16=True`: "
                "there is no float32 copy of the weights, so updates smaller than about 1/256 of a weight are "
                "rounded away. Load it in float32; bf16=True already runs the forward in bfloat16"
            )
            float32 = E.float32_like(dtype_arg.value)
            fix = (
                Fix.unsafe("Load the model in float32", {dtype_arg.value: float32}) if float32 is not None
                else NoFix("the dtype is a bare imported name; write `torch.float32` in its place")
            )
            yield self.violation(site.node, message, fix=fix)

    def _cast_back(self, target: str) -> bool:
        """``target.float()`` or ``target.to(torch.float32)`` somewhere in the file."""
        for call in self.facts.calls:
            text = call.func_text or ""
            if text == f"{target}.float":
                return True
            if text == f"{target}.to" and any(
                (self.facts.bindings.qualname(arg.value, call.ctx.scope) or "") in ("torch.float32", "torch.float")
                for arg in call.node.args
            ):
                return True
        return False


def _given(call: cst.Call, name: str) -> bool:
    """``name=`` is passed a value other than a literal ``None``, ``False`` or empty string."""
    value = S.keyword_arg_value(call, name)
    if value is None or (isinstance(value, cst.Name) and value.value in ("None", "False")):
        return False
    return S.string_value(value) != ""

