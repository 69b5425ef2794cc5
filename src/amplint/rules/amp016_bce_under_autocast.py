from __future__ import annotations

from typing import Iterator

import libcst as cst

from amplint.amp import AutocastRegion
from amplint.semantic import CallSite, Context
from amplint.fix import NoFix
from amplint.model import FixSafety
from amplint.rules.base import Invalid, Rule, Violation

_BCE_FUNCTIONS = frozenset({"torch.nn.functional.binary_cross_entropy"})
_BCE_CLASSES = frozenset({"torch.nn.BCELoss", "torch.nn.modules.BCELoss", "torch.nn.modules.loss.BCELoss"})


class BceUnderAutocast(Rule):
    """
    ## What it does
    Finds `torch.nn.functional.binary_cross_entropy` and `torch.nn.BCELoss` called inside a CUDA
    autocast region: `torch.autocast("cuda")`, `torch.amp.autocast("cuda")` or the deprecated
    `torch.cuda.amp.autocast()`, directly or in a same-file helper called from the region. A `BCELoss`
    counts when an instance created anywhere in the file (`self.criterion = nn.BCELoss()`) or inline
    (`nn.BCELoss()(p, y)`) is called there.

    ## Why is this bad?
    `binary_cross_entropy` is on autocast's list of unsafe ops: under CUDA autocast it raises
    `RuntimeError: torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to
    autocast`, because the probabilities it takes (a sigmoid in float16) lose too much precision near
    0 and 1. The loop works in float32 and on CPU, then crashes on the first mixed-precision GPU step.

    ## Example
    ```python
    import torch
    import torch.nn.functional as F

    def train_step(model, optimizer, scaler, x, y):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.binary_cross_entropy(torch.sigmoid(model(x)), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Use instead
    ```python
    import torch
    import torch.nn.functional as F

    def train_step(model, optimizer, scaler, x, y):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.binary_cross_entropy_with_logits(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Fix safety
    There is no fix: the safe replacement, `binary_cross_entropy_with_logits` / `BCEWithLogitsLoss`,
    takes the logits, so the `sigmoid` before the loss must go too, which is a change to the model's
    interface. Regions on CPU, regions whose device is not known statically, and calls under
    `autocast(enabled=False)` are not reported.

    ## References
    - [Prefer binary_cross_entropy_with_logits over binary_cross_entropy](https://pytorch.org/docs/stable/amp.html#prefer-binary-cross-entropy-with-logits-over-binary-cross-entropy)
    - [Automatic Mixed Precision examples](https://pytorch.org/docs/stable/notes/amp_examples.html)
    """

    code = "AMP016"
    name = "bce-under-autocast"
    summary = "`binary_cross_entropy` / `BCELoss` under CUDA autocast raises"
    fix_safety = FixSafety.NONE
    # Literal substrings for the prefilter: BCE is only banned inside an autocast region.
    triggers = ("autocast",)
    # A loss helper defined elsewhere in the file may be what runs under autocast.
    focus_tokens = ("binary_cross_entropy", "BCELoss")

    valid = (
        "import torch\nimport torch.nn.functional as F\nwith torch.autocast('cpu'):\n    loss = F.binary_cross_entropy(p, y)\n",
        "import torch\nimport torch.nn.functional as F\nwith torch.autocast('cuda'):\n    z = model(x)\n"
        "with torch.autocast('cuda', enabled=False):\n    loss = F.binary_cross_entropy(torch.sigmoid(z.float()), y)\n",
        "import torch\nimport torch.nn.functional as F\ndef f(device, p, y):\n    with torch.autocast(device):\n"
        "        return F.binary_cross_entropy(p, y)\n",
        "import torch\nwith torch.autocast('cuda'):\n    loss = torch.nn.BCEWithLogitsLoss()(z, y)\n",
    )
    invalid = (
        Invalid("import torch\nimport torch.nn.functional as F\nwith torch.autocast('cuda'):\n    loss = F.binary_cross_entropy(p, y)\n"),
        Invalid(
            "import torch\nfrom torch import nn\ncriterion = nn.BCELoss()\nwith torch.cuda.amp.autocast():\n"
            "    loss = criterion(torch.sigmoid(model(x)), y)\n"
        ),
        Invalid("import torch\nwith torch.autocast(device_type='cuda'):\n    loss = torch.nn.BCELoss()(p, y)\n"),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        instances = self._bce_instances()
        uses: list[tuple[CallSite, str]] = []
        for site in facts.calls:
            if site.qualname in _BCE_FUNCTIONS:
                uses.append((site, "F.binary_cross_entropy"))
            elif site.func_text is not None and site.func_text in instances:
                uses.append((site, "BCELoss"))
            elif isinstance(site.node.func, cst.Call):
                inner = facts.call_site(site.node.func)
                if inner is not None and inner.qualname in _BCE_CLASSES:
                    uses.append((site, "BCELoss"))
        for site, kind in uses:
            reason = self._under_cuda_autocast(site)
            if reason is None:
                continue
            better = "binary_cross_entropy_with_logits" if kind != "BCELoss" else "BCEWithLogitsLoss"
            yield self.violation(
                site.node,
                f"`{kind}` raises under CUDA autocast ({reason}): it is unsafe to autocast; use "
                f"`{better}` on the logits (drop the sigmoid) instead",
                fix=NoFix(f"switching to `{better}` also removes the sigmoid before it"),
            )

    def _bce_instances(self) -> set[str]:
        """Names (``criterion`` / ``self.bce``) every assignment of which builds a ``BCELoss``."""
        facts = self.facts
        candidates: dict[str, bool] = {}
        for assignment in facts.assignments:
            for target in assignment.targets:
                value = assignment.value
                site = facts.call_site(value) if isinstance(value, cst.Call) else None
                is_bce = site is not None and site.qualname in _BCE_CLASSES
                candidates[target] = candidates.get(target, True) and is_bce
        return {target for target, ok in candidates.items() if ok}

    # -- is the call under CUDA autocast?
    def _cuda_region(self, ctx: Context) -> AutocastRegion | None:
        if any(r.enabled is False for r in self.facts.enclosing_autocast(ctx, enabled_only=False)) and not self.facts.enclosing_autocast(ctx):
            return None
        for region in reversed(self.facts.enclosing_autocast(ctx)):
            if region.resolved and region.device == "cuda":
                return region
        return None

    def _under_cuda_autocast(self, site: CallSite) -> str | None:
        facts = self.facts
        region = self._cuda_region(site.ctx)
        if region is not None:
            return f"autocast region on line {facts.position(region.node).start.line}"
        # A same-file helper whose body holds the call, called from a CUDA region.
        if site.ctx.withs or facts.enclosing_autocast(site.ctx, enabled_only=False):
            return None  # the helper manages autocast itself
        function = facts.function_of(site.ctx.scope)
        if function is None:
            return None
        for caller in facts.calls:
            if caller.ctx.scope is site.ctx.scope:
                continue
            if function in facts.called_functions(caller) and self._cuda_region(caller.ctx) is not None:
                line = facts.position(caller.node).start.line
                return f"`{function.node.name.value}` is called under CUDA autocast on line {line}"
        return None
