from __future__ import annotations

from textwrap import dedent
from typing import Iterator

from amplint.model import FixSafety
from amplint.rules.base import Rule, Violation


class TrainerFp16AndBf16(Rule):
    """
    ## What it does
    Finds `transformers.TrainingArguments(...)` and `Seq2SeqTrainingArguments(...)` (any import
    spelling) given both `fp16=True` and `bf16=True` as literals, or both
    `fp16_full_eval=True` and `bf16_full_eval=True`.

    Not reported: values that are not literals (`fp16=args.fp16, bf16=args.bf16`, which a command
    line may set one at a time), one of the two alone, calls inside `pytest.raises(...)` /
    `self.assertRaises(...)` (a test of the error itself), and other classes with an `fp16=`
    argument.

    ## Why is this bad?
    The two flags pick one autocast dtype and at most one of them can hold.
    `TrainingArguments.__post_init__` raises
    `ValueError: At most one of fp16 and bf16 can be True, but not both` (and the same for full
    eval), so the script fails before training starts, usually after the model was loaded. Which
    one was meant is a choice: fp16 needs loss scaling (the Trainer builds a GradScaler), bf16
    needs hardware that supports it (Ampere or newer on CUDA).

    ## Example
    ```python
    from transformers import TrainingArguments

    args = TrainingArguments(output_dir="out", fp16=True, bf16=True)
    ```

    ## Use instead
    ```python
    from transformers import TrainingArguments

    args = TrainingArguments(output_dir="out", bf16=True)
    ```

    ## Fix safety
    There is no fix: which precision to keep is the user's decision (bf16 where the hardware
    supports it, fp16 otherwise).

    ## References
    - [TrainingArguments: fp16 / bf16](https://huggingface.co/docs/transformers/main_classes/trainer#transformers.TrainingArguments)
    - transformers 5.25.0 `src/transformers/training_args.py:1784-1788` (the two `ValueError`s in
      `__post_init__`), `src/transformers/training_args_seq2seq.py:29`
      (`class Seq2SeqTrainingArguments(TrainingArguments)`)
    """

    code = "AMP021"
    name = "trainer-fp16-and-bf16"
    summary = "`TrainingArguments(fp16=True, bf16=True)` raises `ValueError` at construction"
    fix_safety = FixSafety.NONE
    # The call resolves to transformers' class only through a name holding "TrainingArguments"
    # (also in Seq2SeqTrainingArguments); "bf16" is in every model file that mentions the dtype.
    triggers = ("TrainingArguments",)
    requires = ("bf16",)

    valid = (
        "from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', bf16=True)\n",
        "from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', fp16=args.fp16, bf16=args.bf16)\n",
        "from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', fp16=True, bf16=False)\n",
        "from mylib import TrainingArguments\nargs = TrainingArguments(fp16=True, bf16=True)\n",
        dedent("""\
        import pytest
        from transformers import TrainingArguments

        def test_both_precisions_raise():
            with pytest.raises(ValueError):
                TrainingArguments(output_dir="o", fp16=True, bf16=True)
        """),
    )
    invalid = (
        "from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', fp16=True, bf16=True)\n",
        "import transformers\nargs = transformers.Seq2SeqTrainingArguments(\n    'o',\n    bf16=True,\n    fp16=True,\n)\n",
        "from transformers import TrainingArguments as TA\nargs = TA('o', fp16_full_eval=True, bf16_full_eval=True)\n",
    )

    def check(self) -> Iterator[Violation]:
        for found in self.facts.frameworks.conflicting_training_arguments:
            a, b = found.flags
            yield self.violation(
                found.node,
                f"`{a}=True` and `{b}=True` together: `TrainingArguments` raises `ValueError: At most one of fp16 "
                f"and bf16 can be True, but not both`{' for full eval' if 'eval' in a else ''}; keep one",
            )
