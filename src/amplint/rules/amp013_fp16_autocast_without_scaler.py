from __future__ import annotations

from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.amp import EventKind
from amplint.model import FixSafety
from amplint.rules.base import Rule, Violation
from amplint.semantic import Scope


class Fp16AutocastWithoutScaler(Rule):
    """
    ## What it does
    Finds training functions that compute the loss under float16 autocast
    (`torch.autocast("cuda")`, whose default dtype is float16, or an explicit
    `dtype=torch.float16`), then call `loss.backward()` and `optimizer.step()` themselves, in a file
    with no `GradScaler` at all. Files where something else scales the loss are not reported:
    accelerate (`accelerator.backward`), Lightning (`self.manual_backward`), apex
    (`amp.scale_loss`), DeepSpeed (`model_engine.backward`), or a scaler passed in from elsewhere (a
    `scaler`/`loss_scaler` parameter or attribute).

    ## Why is this bad?
    float16 cannot represent magnitudes below about 6e-8: without loss scaling, small gradients of
    the float16 ops flush to zero in backward, and the affected parameters silently stop learning.
    The AMP recipe pairs float16 autocast with a `GradScaler` for exactly this reason (bfloat16 needs
    none).

    ## Example
    ```python
    import torch

    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    import torch

    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Fix safety
    There is no automatic fix: adding a scaler rewrites the backward, the step and the update, and
    where it is built (once per run) is a design decision. Switching to `dtype=torch.bfloat16` on
    hardware that supports it is the other way out.

    ## References
    - [Automatic Mixed Precision package - gradient scaling](https://pytorch.org/docs/stable/amp.html#gradient-scaling)
    - [CUDA Automatic Mixed Precision examples](https://pytorch.org/docs/stable/notes/amp_examples.html)
    - [Automatic Mixed Precision recipe](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    """

    code = "AMP013"
    name = "fp16-autocast-without-scaler"
    summary = "Backward and optimizer step under float16 autocast with no GradScaler"
    fix_safety = FixSafety.NONE
    triggers = ("autocast",)

    valid = (
        dedent("""\
        import torch
        scaler = torch.amp.GradScaler('cuda')
        for x in loader:
            with torch.autocast('cuda'):
                loss = model(x)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        """),
        dedent("""\
        import torch
        for x in loader:
            with torch.autocast('cuda', dtype=torch.bfloat16):
                loss = model(x)
            loss.backward()
            opt.step()
        """),
        dedent("""\
        import torch
        def train(model, opt, loader, accelerator):
            for x in loader:
                with torch.autocast('cuda'):
                    loss = model(x)
                accelerator.backward(loss)
                opt.step()
        """),
        dedent("""\
        import torch
        def train(model, opt, loader, loss_scaler):
            for x in loader:
                with torch.autocast('cuda'):
                    loss = model(x)
                loss.backward()
                opt.step()
        """),
    )
    invalid = (
        dedent("""\
        import torch
        for x in loader:
            with torch.autocast('cuda'):
                loss = model(x)
            loss.backward()
            opt.step()
        """),
        dedent("""\
        import torch
        def train(model, opt, loader):
            for x, y in loader:
                with torch.autocast(device_type='cuda', dtype=torch.float16):
                    out = model(x)
                loss = crit(out, y)
                loss.backward()
                opt.step()
        """),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        if facts.scalers or facts.loss_scaled_elsewhere:
            return
        by_scope: dict[Scope, list[cst.With]] = {}
        for node, regions in facts.autocast_regions.items():
            if not isinstance(node, cst.With):
                continue
            ctx = facts.with_contexts.get(node)
            if ctx is None or facts.in_no_grad(ctx):
                continue
            if any(r.resolved and r.enabled is not False and r.effective_dtype == "float16" for r in regions):
                if not any(r.effective_dtype == "bfloat16" or not r.resolved for r in regions):
                    by_scope.setdefault(ctx.scope, []).append(node)
        for scope, withs in by_scope.items():
            events = facts.events_by_scope.get(scope, [])
            if not any(e.kind == EventKind.OPTIMIZER_STEP for e in events):
                continue
            for event in events:
                if event.kind == EventKind.BACKWARD and facts.loss_computed_under(event, withs):
                    yield self.violation(
                        event.call,
                        f"`{facts.code(event.call)}` backpropagates a loss computed under float16 autocast and no "
                        "GradScaler exists in this file: small gradients underflow to zero in float16. Scale the loss "
                        "with `torch.amp.GradScaler` (or use bfloat16)",
                    )
                    break
