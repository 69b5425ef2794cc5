from __future__ import annotations

from typing import Iterator

import amplint.semantic.syntax as S
from amplint.model import FixSafety, Severity
from amplint.rules.base import Rule, Violation


class ScalerWithBf16(Rule):
    """
    ## What it does
    Reports an enabled `GradScaler` in a file whose every autocast region runs in bfloat16: all
    regions pass `dtype=torch.bfloat16`, are CPU regions with the default dtype (bfloat16), or take
    their dtype from a choice that only ever yields bfloat16 or float32 (`torch.bfloat16 if bf16
    else torch.float32`, a dict of dtypes without float16, a dict looked up by a command-line option
    whose `choices=` leave float16 out). A scaler built with `enabled=` set from a condition is
    reported only when that condition is the very one every region is enabled by
    (`GradScaler(enabled=cfg.bf16)` beside `autocast(dtype=torch.bfloat16, enabled=cfg.bf16)`).
    Files with any region whose dtype is unknown or may be float16 are not reported.

    ## Why is this bad?
    Loss scaling exists because float16 has a narrow exponent range and small gradients underflow
    to zero. bfloat16 has float32's exponent range, so its gradients do not underflow and need no
    scaling: the AMP docs use a `GradScaler` only with float16. The scaler then only adds work (a
    multiplication, an inf/NaN check per step, a host sync) and may still skip steps on overflow.
    This is informational: the code trains correctly.

    ## Example
    ```python
    import torch

    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Use instead
    ```python
    import torch

    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Fix safety
    There is no fix: removing the scaler means rewriting every `scale`/`step`/`update` call, and a
    scaler kept for a float16 mode should be built with `enabled=(dtype == torch.float16)`.

    ## References
    - [Automatic Mixed Precision package - torch.amp](https://pytorch.org/docs/stable/amp.html)
    - [CUDA Automatic Mixed Precision examples](https://pytorch.org/docs/stable/notes/amp_examples.html)
    - [Automatic Mixed Precision recipe](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    """

    code = "AMP011"
    name = "scaler-with-bf16"
    summary = "GradScaler used only with bfloat16 autocast"
    severity = Severity.INFO
    fix_safety = FixSafety.NONE
    triggers = ("GradScaler",)
    # The command-line choices that narrow a dtype table's key live in ``main()``.
    focus_tokens = ("add_argument",)

    valid = (
        "import torch\nscaler = torch.amp.GradScaler('cuda')\nwith torch.autocast('cuda'):\n    loss = model(x)\n",
        "import torch\nscaler = torch.amp.GradScaler('cuda', enabled=dtype == torch.float16)\n"
        "with torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)\n",
        "import torch\nscaler = torch.amp.GradScaler('cuda')\nwith torch.autocast('cuda', dtype=amp_dtype):\n    loss = model(x)\n",
        "import torch\nscaler = torch.amp.GradScaler('cuda')\n",
        "import torch\nDT = {'bf16': torch.bfloat16, 'fp16': torch.float16}\nscaler = torch.amp.GradScaler('cuda')\n"
        "with torch.autocast('cuda', dtype=DT[args.precision]):\n    loss = model(x)\n",
    )
    invalid = (
        "import torch\nscaler = torch.amp.GradScaler('cuda')\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)\n",
        "import torch\nscaler = torch.amp.GradScaler('cpu')\nwith torch.autocast('cpu'):\n    loss = model(x)\n",
        "import torch\nscaler = torch.cuda.amp.GradScaler(enabled=True)\n"
        "with torch.cuda.amp.autocast(dtype=torch.bfloat16):\n    loss = model(x)\n",
        "import torch\nscaler = torch.amp.GradScaler('cuda', enabled=cfg.bf16)\n"
        "with torch.autocast('cuda', dtype=torch.bfloat16, enabled=cfg.bf16):\n    loss = model(x)\n",
        "import torch\ndtype = torch.bfloat16 if bf16 else torch.float32\nscaler = torch.amp.GradScaler('cuda')\n"
        "with torch.autocast('cuda', dtype=dtype):\n    loss = model(x)\n",
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        if not facts.scaling.scalers:
            return
        regions = [r for rs in facts.autocast.autocast_regions.values() for r in rs if r.enabled is not False]
        if not regions or any(not self._without_float16(r) for r in regions):
            return
        if not any("bfloat16" in r.dtypes for r in regions):
            return
        gates = {facts.tree.flat(r.enabled_node) if r.enabled is None and r.enabled_node is not None else None for r in regions}
        dtypes = " (or float32)" if any("float32" in r.dtypes for r in regions) else ""
        otherwise = f"but every autocast region in this file runs in bfloat16{dtypes}"
        for info in facts.scaling.scalers.values():
            for site in info.constructions:
                if S.has_star_args(site.node) or len(S.positional_args(site.node)) > 2:
                    continue
                enabled = S.keyword_arg_value(site.node, "enabled")
                gated = enabled is not None and S.bool_value(enabled) is None and gates == {facts.tree.flat(enabled)}
                if enabled is not None and S.bool_value(enabled) is not True and not gated:
                    continue
                when = f"exactly when `{facts.code(enabled)}` enables the autocast regions, which run in bfloat16{dtypes}" \
                    if gated else otherwise
                yield self.violation(
                    site.node,
                    f"GradScaler is enabled {when}; bfloat16 has float32's exponent range "
                    "and needs no loss scaling: the scaler only adds work (drop it, or build it with `enabled=` "
                    "true only for float16)",
                )

    @staticmethod
    def _without_float16(region) -> bool:
        """The region is an autocast whose every choice is known and runs in bfloat16 or float32."""
        dtypes = region.dtypes
        return region.resolved and region.choices_known and dtypes is not None and dtypes <= {"bfloat16", "float32"}
