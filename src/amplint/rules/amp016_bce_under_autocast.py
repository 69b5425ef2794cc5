from __future__ import annotations

from textwrap import dedent
from typing import Iterator

from amplint.fix import NoFix
from amplint.model import FixSafety
from amplint.rules.base import Invalid, Rule, Violation

_BCE_FUNCTIONS = frozenset({"torch.nn.functional.binary_cross_entropy"})
_BCE_CLASSES = frozenset({"torch.nn.BCELoss", "torch.nn.modules.BCELoss", "torch.nn.modules.loss.BCELoss"})
_LOGITS_VARIANT = {"F.binary_cross_entropy": "binary_cross_entropy_with_logits", "BCELoss": "BCEWithLogitsLoss"}


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
        dedent("""\
            import torch
            import torch.nn.functional as F
            with torch.autocast('cpu'):
                loss = F.binary_cross_entropy(p, y)
        """),
        dedent("""\
            import torch
            import torch.nn.functional as F
            with torch.autocast('cuda'):
                z = model(x)
            with torch.autocast('cuda', enabled=False):
                loss = F.binary_cross_entropy(torch.sigmoid(z.float()), y)
        """),
        dedent("""\
            import torch
            import torch.nn.functional as F
            def f(device, p, y):
                with torch.autocast(device):
                    return F.binary_cross_entropy(p, y)
        """),
        dedent("""\
            import torch
            with torch.autocast('cuda'):
                loss = torch.nn.BCEWithLogitsLoss()(z, y)
        """),
    )
    invalid = (
        Invalid(
            dedent("""\
                import torch
                import torch.nn.functional as F
                with torch.autocast('cuda'):
                    loss = F.binary_cross_entropy(p, y)
            """),
        ),
        Invalid(
            dedent("""\
                import torch
                from torch import nn
                criterion = nn.BCELoss()
                with torch.cuda.amp.autocast():
                    loss = criterion(torch.sigmoid(model(x)), y)
            """),
        ),
        Invalid(
            dedent("""\
                import torch
                with torch.autocast(device_type='cuda'):
                    loss = torch.nn.BCELoss()(p, y)
            """),
        ),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        uses = [(site, "F.binary_cross_entropy") for site in facts.call_index.calls_to(_BCE_FUNCTIONS)]
        uses += [(site, "BCELoss") for site in facts.values.instance_calls(_BCE_CLASSES) if site.qualname not in _BCE_FUNCTIONS]
        for site, kind in uses:
            better = _LOGITS_VARIANT[kind]
            reach = facts.autocast.cuda_autocast_reaching(site)
            if reach is None:
                continue
            if reach.caller is None:
                reason = f"autocast region on line {facts.position(reach.region.node).start.line}"
            else:
                function = facts.callgraph.function_of(site.ctx.scope)
                line = facts.position(reach.caller.node).start.line
                reason = f"`{function.node.name.value}` is called under CUDA autocast on line {line}"
            yield self.violation(
                site.node,
                f"`{kind}` raises under CUDA autocast ({reason}): it is unsafe to autocast; use "
                f"`{better}` on the logits (drop the sigmoid) instead",
                fix=NoFix(f"switching to `{better}` also removes the sigmoid before it"),
            )
