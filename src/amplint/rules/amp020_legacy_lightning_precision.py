from __future__ import annotations

from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.amp.frameworks import LegacyPrecision
from amplint.fix import Fix
import amplint.fix.edits as E
from amplint.model import FixSafety, Severity
from amplint.rules.base import Invalid, Rule, Violation


class LegacyLightningPrecision(Rule):
    """
    ## What it does
    Finds a Lightning `Trainer` or `Fabric` (`lightning.Trainer`, `lightning.pytorch.Trainer`,
    `pytorch_lightning.Trainer`, `lightning.Fabric`, `lightning.fabric.Fabric`,
    `lightning_fabric.Fabric`, any import spelling) built with a legacy literal precision:
    `precision=16`, `precision="16"` or `precision="bf16"`.

    Not reported: `32` / `64` (Lightning maps them to `"32-true"` / `"64-true"` without a warning),
    the current spellings (`"16-mixed"`, `"bf16-mixed"`, `"16-true"`, `"bf16-true"`,
    `"transformer-engine"` ...), values that are not literals (`precision=args.precision`), calls
    inside `pytest.warns(...)` / `pytest.raises(...)`, and calls that pass an argument Lightning 2
    does not take (`gpus=`, `amp_backend=`, `tpu_cores=`, `resume_from_checkpoint=` ...): those
    are written for Lightning 1.x, where `16` and `"bf16"` are the only spellings and
    `"16-mixed"` is a `ValueError` (pytorch-lightning 1.9.5
    `trainer/connectors/accelerator_connector.py:92-94`, `315-319`).

    ## Why is this bad?
    Lightning 2 keeps the old values only as aliases: `_convert_precision_to_unified_args` warns
    "`precision=16` is supported for historical reasons but its usage is discouraged. Please set
    your precision to 16-mixed instead!" and maps them through
    `{"16": "16-mixed", "bf16": "bf16-mixed"}`. The spelling hides what the setting does: `16`
    reads like half-precision weights (`"16-true"`), yet it is mixed precision with fp32 weights
    and a GradScaler, and the distinction matters since Lightning added the `-true` modes.

    ## Example
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="gpu", devices=1, precision=16)
    ```

    ## Use instead
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="gpu", devices=1, precision="16-mixed")
    ```

    ## Fix safety
    The fix is safe: it replaces only the value, with the exact string Lightning maps it to
    (`16` and `"16"` become `"16-mixed"`, `"bf16"` becomes `"bf16-mixed"`), so the Trainer is
    configured as before, minus the warning. A string keeps its quote character; an integer
    becomes a string in the quotes the call's other strings use (double quotes by default). The
    new spelling needs Lightning 2.0 or newer; calls recognisably written for Lightning 1.x are
    not reported (see above), but a 1.x script that passes only arguments both versions share
    would need the old value kept (`# noqa: AMP020`).

    ## References
    - [Lightning: N-bit precision](https://lightning.ai/docs/pytorch/stable/common/precision_basic.html)
    - [Trainer `precision`](https://lightning.ai/docs/pytorch/stable/common/trainer.html#precision)
    - lightning 2.6.6 `lightning/fabric/plugins/precision/precision.py:23-36` (`_PRECISION_INPUT`,
      `_PRECISION_INPUT_STR_ALIAS_CONVERSION`), `lightning/fabric/connector.py:557-576`
      (`_convert_precision_to_unified_args`, the warning at 570-574, used by `Fabric` at 225),
      `lightning/pytorch/trainer/connectors/accelerator_connector.py:224` (the `Trainer`)
    """

    code = "AMP020"
    name = "legacy-lightning-precision"
    summary = 'Lightning `Trainer`/`Fabric` with a legacy `precision` (`16`, `"bf16"`) instead of `"16-mixed"`/`"bf16-mixed"`'
    severity = Severity.WARNING
    fix_safety = FixSafety.SAFE
    # The Trainer / Fabric resolves to a Lightning name only through an import of it, whose text
    # holds "lightning" (lightning, pytorch_lightning, lightning_fabric); "precision" is in
    # every other file of a model library.
    triggers = ("lightning",)
    requires = ("precision",)

    valid = (
        "import lightning as L\ntrainer = L.Trainer(precision='16-mixed')\n",
        "import lightning as L\ntrainer = L.Trainer(precision=32)\nfabric = L.Fabric(precision='bf16-true')\n",
        "import lightning as L\ntrainer = L.Trainer(precision=args.precision)\n",
        # Lightning 1.x: `gpus=` is gone in 2.0, and there `16` is the only spelling.
        "import pytorch_lightning as pl\ntrainer = pl.Trainer(gpus=1, precision=16)\n",
        # Not Lightning's Trainer.
        "from transformers import Trainer\ntrainer = Trainer(model=model, precision=16)\n",
        dedent("""\
        import pytest
        from lightning.pytorch import Trainer

        def test_legacy_precision_warns():
            with pytest.warns(UserWarning, match="historical reasons"):
                Trainer(precision=16)
        """),
    )
    invalid = (
        Invalid(
            "import lightning as L\ntrainer = L.Trainer(accelerator='gpu', devices=1, precision=16)\n",
            fixed="import lightning as L\ntrainer = L.Trainer(accelerator='gpu', devices=1, precision='16-mixed')\n",
        ),
        Invalid(
            'from pytorch_lightning import Trainer\ntrainer = Trainer(max_epochs=3, precision="bf16")\n',
            fixed='from pytorch_lightning import Trainer\ntrainer = Trainer(max_epochs=3, precision="bf16-mixed")\n',
        ),
        Invalid(
            "from lightning.fabric import Fabric\nfabric = Fabric(precision='16')\n",
            fixed="from lightning.fabric import Fabric\nfabric = Fabric(precision='16-mixed')\n",
        ),
        Invalid(
            "import lightning.pytorch as pl\ntrainer = pl.Trainer(precision=16, **extra)\n",
            fixed='import lightning.pytorch as pl\ntrainer = pl.Trainer(precision="16-mixed", **extra)\n',
        ),
    )

    def check(self) -> Iterator[Violation]:
        for found in self.facts.frameworks.legacy_lightning_precisions:
            shown = self.facts.code(found.value)
            yield self.violation(
                found.value,
                f"`precision={shown}` is a legacy {found.kind} value: Lightning 2 warns "
                f'("supported for historical reasons") and maps it to "{found.replacement}"; '
                f'spell it "{found.replacement}"',
                fix=Fix.safe(f'Use "{found.replacement}"', {found.value: self._literal(found)}),
            )

    @staticmethod
    def _literal(found: LegacyPrecision) -> cst.SimpleString:
        if isinstance(found.value, cst.SimpleString):
            return E.string_literal_like(found.value, found.replacement)
        like = next((arg.value for arg in found.site.node.args if isinstance(arg.value, cst.SimpleString)), None)
        return E.string_literal_like(like, found.replacement) if like is not None else E.string_literal(found.replacement)
