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
    Finds training loops that compute the loss under float16 autocast
    (`torch.autocast("cuda")`, whose default dtype is float16, or an explicit
    `dtype=torch.float16`), then call `loss.backward()` and `optimizer.step()` themselves, with no
    `GradScaler` at work in that loop: a scaler used by another loop of the file does not help this
    one. An autocast chosen by a condition or from a dict
    (`with {"fp16": torch.autocast(..., dtype=torch.float16), "fp32": nullcontext()}[args.mp]:`)
    counts when one of its choices is float16; a `dtype=` variable counts only when every value the
    file gives it is known (a dict of dtypes, narrowed by the `choices=` of its command-line option).
    An autocast opened through a helper counts as the call opens it: a function of the file or,
    through the project pass, of another module of the project that returns or yields an autocast
    (`@contextmanager def torch_autocast(device_type="cuda", **kwargs): with
    torch.amp.autocast(device_type=device_type, **kwargs): yield`), read with the device type,
    `dtype=` and `enabled=` the call passes, or the helper's defaults.
    Loops where something else scales the loss are not reported: a scaler passed in (a
    `scaler`/`loss_scaler` parameter, or a name like that used in the loop), accelerate
    (`accelerator.backward`), Lightning (`self.manual_backward`), apex (`amp.scale_loss`), DeepSpeed
    (`model_engine.backward`), nor files that import one of those frameworks.

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
    # The command-line choices that narrow a dtype table's key live in ``main()``.
    focus_tokens = ("add_argument",)

    valid = (
        dedent("""\
        import torch
        from contextlib import nullcontext
        for x in loader:
            with {'bf16': torch.autocast('cuda', dtype=torch.bfloat16), 'fp32': nullcontext()}[args.mp]:
                loss = model(x)
            loss.backward()
            opt.step()
        """),
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
        def pretrain(model, opt, loader):
            scaler = torch.amp.GradScaler('cuda')
            for x in loader:
                with torch.autocast('cuda'):
                    loss = model(x)
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
        def finetune(model, opt, loader):
            for x in loader:
                with torch.autocast('cuda'):
                    loss = model(x)
                loss.backward()
                opt.step()
        """),
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
        by_scope: dict[Scope, list[cst.With]] = {}
        for node, regions in facts.autocast.autocast_regions.items():
            ctx = facts.with_contexts.get(node) if isinstance(node, cst.With) else None
            if ctx is not None and not facts.models.in_no_grad(ctx) and self._may_run_float16(regions):
                by_scope.setdefault(ctx.scope, []).append(node)
        for scope, withs in by_scope.items():
            events = facts.timeline.events_by_scope.get(scope, [])
            reported: set[cst.CSTNode] = set()
            for event in events:
                if event.kind != EventKind.BACKWARD or not facts.loss_scaling.loss_computed_under(event, withs):
                    continue
                unit = facts.loop_scaling.training_unit(event.ctx)
                steps = any(e.kind == EventKind.OPTIMIZER_STEP and facts.tree.within(e.call, unit) for e in events)
                if unit in reported or not steps or facts.loop_scaling.loss_scaling_in(event):
                    continue
                reported.add(unit)
                chosen = any(r.dtypes != {"float16"} for w in withs for r in facts.autocast.autocast_regions[w])
                under = "an autocast that may run in float16" if chosen else "float16 autocast"
                yield self.violation(
                    event.call,
                    f"`{facts.code(event.call)}` backpropagates a loss computed under {under} and no "
                    "GradScaler scales it in this training loop: small gradients underflow to zero in float16. "
                    "Scale the loss with `torch.amp.GradScaler` (or use bfloat16)",
                )

    @staticmethod
    def _may_run_float16(regions) -> bool:
        """A ``with`` whose autocast may run in float16 (one alternative of a choice is enough), with
        every item resolved and none that is only bfloat16."""
        if any(not r.resolved or r.dtypes is None or r.dtypes == {"bfloat16"} for r in regions):
            return False
        return any(r.enabled is not False and "float16" in r.dtypes for r in regions)
