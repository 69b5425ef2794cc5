from __future__ import annotations

from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.amp.frameworks import TRAINING_ARGUMENTS
from amplint.fix import Fix, NoFix
import amplint.fix.edits as E
from amplint.model import FixSafety, Severity
from amplint.rules.base import Invalid, Rule, Violation
import amplint.semantic.syntax as S

# The precision arguments transformers 5.0 removed from ``TrainingArguments``, with their
# transformers 4 defaults (4.57.6 training_args.py:1081-1096, 1437-1443): passing the default
# changes nothing on 4.x, so dropping it is exact there and required on 5.x.
_REMOVED_IN_5 = {"fp16_backend": "auto", "half_precision_backend": "auto", "fp16_opt_level": "O1"}
_FIVE = (5, 0)


class RemovedTrainerPrecisionArgument(Rule):
    """
    ## What it does
    Finds `transformers.TrainingArguments(...)` and `Seq2SeqTrainingArguments(...)` given a
    mixed-precision argument that transformers 5.0 removed:

    - `fp16_backend=`, deprecated through transformers 4 and removed in 5.0: always reported;
    - `half_precision_backend=` and `fp16_opt_level=` (Apex's optimization level): reported when
      the project supports only transformers 5 or newer, read from `target-transformers` or from
      its transformers requirement (`transformers>=5`, in `pyproject.toml`, `setup.cfg`,
      `setup.py` or `requirements*.txt`, as `target-torch` is read). On transformers 4 they are
      still valid, so with no such bound the rule stays silent.

    Calls inside `pytest.raises(...)` / `self.assertRaises(...)` are not reported.

    ## Why is this bad?
    `TrainingArguments` is a dataclass: an argument it no longer has raises
    `TypeError: TrainingArguments.__init__() got an unexpected keyword argument 'fp16_backend'`
    before anything is built. transformers 5 runs fp16 and bf16 through Accelerate's native
    autocast and GradScaler only: Apex (`half_precision_backend="apex"`, `fp16_opt_level`) and the
    `"cpu_amp"` backend are gone (on the CPU, `use_cpu=True` with `bf16=True` runs CPU autocast).
    On transformers 4, `fp16_backend` warns `FutureWarning: fp16_backend is deprecated and will
    be removed in version 5` and is copied into `half_precision_backend`.

    ## Example
    ```python
    from transformers import TrainingArguments

    args = TrainingArguments("out", fp16=True, fp16_backend="auto", fp16_opt_level="O1")
    ```

    ## Use instead
    ```python
    from transformers import TrainingArguments

    args = TrainingArguments("out", fp16=True)
    ```

    ## Fix safety
    An argument set to its transformers 4 default (`"auto"` for the two backends, `"O1"` for
    `fp16_opt_level`) is removed, a safe fix: it changes nothing on transformers 4 and is what
    transformers 5 needs. On a project that still admits transformers 4, `fp16_backend="apex"` or
    `"cpu_amp"` is renamed to `half_precision_backend`, also safe: transformers 4 copies the one
    into the other (4.57.6 `training_args.py:1729-1735`). Any other value has no fix: choosing
    what replaces Apex is the author's call.

    ## References
    - [TrainingArguments](https://huggingface.co/docs/transformers/main_classes/trainer#transformers.TrainingArguments)
    - transformers 4.57.6 `src/transformers/training_args.py:1081-1096` (`fp16_opt_level`,
      `half_precision_backend`), 1437-1443 (`fp16_backend`, deprecated), 1729-1735 (its
      `FutureWarning`, and the copy into `half_precision_backend`)
    - transformers 5.0.0 `src/transformers/training_args.py`: `class TrainingArguments` has none of
      the three fields (5.25.0 likewise)
    """

    code = "AMP029"
    name = "removed-trainer-precision-argument"
    summary = "a `TrainingArguments` precision argument removed in transformers 5 (`fp16_backend`, `half_precision_backend`, `fp16_opt_level`)"
    severity = Severity.WARNING
    fix_safety = FixSafety.SAFE
    fix_withheld = "for a backend other than the default, unless it can be renamed on transformers 4"
    triggers = ("TrainingArguments",)
    requires_match = r"fp16_backend|half_precision_backend|fp16_opt_level"

    valid = (
        "from transformers import TrainingArguments\nargs = TrainingArguments('out', fp16=True)\n",
        # Valid on transformers 4, and nothing says the project is on 5.
        "from transformers import TrainingArguments\nargs = TrainingArguments('out', fp16=True, half_precision_backend='apex', fp16_opt_level='O2')\n",
        "from mylib import TrainingArguments\nargs = TrainingArguments(fp16_backend='apex')\n",
        dedent("""\
        import pytest
        from transformers import TrainingArguments
        def test_removed_argument_raises():
            with pytest.raises(TypeError):
                TrainingArguments("out", fp16_backend="auto")
        """),
    )
    invalid = (
        Invalid(
            dedent("""\
            from transformers import TrainingArguments
            args = TrainingArguments(
                output_dir="out",
                fp16=True,
                fp16_backend="auto",
                learning_rate=2e-5,
            )
            """),
            fixed=dedent("""\
            from transformers import TrainingArguments
            args = TrainingArguments(
                output_dir="out",
                fp16=True,
                learning_rate=2e-5,
            )
            """),
        ),
        Invalid(
            "import transformers\nargs = transformers.TrainingArguments('out', fp16=True, fp16_backend='apex')\n",
            fixed="import transformers\nargs = transformers.TrainingArguments('out', fp16=True, half_precision_backend='apex')\n",
        ),
        # Both spellings given: which one the author meant is theirs to say, so no fix.
        "from transformers import TrainingArguments\nargs = TrainingArguments('out', fp16=True, fp16_backend='apex', half_precision_backend='cpu_amp')\n",
    )

    def check(self) -> Iterator[Violation]:
        five = self._supports_only_five()
        for site in self.facts.call_index.calls_to(TRAINING_ARGUMENTS):
            if self.facts.frameworks.expects_failure(site.ctx):
                continue
            for name, default in _REMOVED_IN_5.items():
                arg = S.keyword_arg(site.node, name)
                if arg is None or (name != "fp16_backend" and not five):
                    continue
                yield self.violation(arg, self._message(name, five), fix=self._fix(site.node, arg, name, default, five))

    def _supports_only_five(self) -> bool:
        target = getattr(self.facts.settings, "target_transformers", None)
        return target is not None and target >= _FIVE

    def _message(self, name: str, five: bool) -> str:
        if five:
            return (
                f"`{name}=` was removed in transformers 5: `TrainingArguments` raises `TypeError: ... unexpected "
                f"keyword argument '{name}'`. transformers 5 runs fp16/bf16 with native torch AMP only; drop it"
            )
        return (
            "`fp16_backend=` is deprecated (a `FutureWarning` on transformers 4) and removed in transformers 5, "
            "where `TrainingArguments` raises `TypeError`; drop it, or use `half_precision_backend=` while on 4"
        )

    def _fix(self, call: cst.Call, arg: cst.Arg, name: str, default: str, five: bool):
        value = S.string_value(arg.value)
        if value == default:
            return Fix.safe(f"Remove `{name}={value!r}` (the default)", {call: E.remove_arg(call, arg)})
        if name == "fp16_backend" and not five and value is not None and S.keyword_arg(call, "half_precision_backend") is None:
            return Fix.safe("Rename to `half_precision_backend=`", {arg: arg.with_changes(keyword=cst.Name("half_precision_backend"))})
        return NoFix("what replaces this backend on transformers 5 is the author's call")
