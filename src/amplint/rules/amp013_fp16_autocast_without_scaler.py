from __future__ import annotations

from typing import Iterator

import libcst as cst

from amplint.amp import Event, EventKind
from amplint.semantic import Scope
from amplint.model import FixSafety
from amplint.rules.base import Rule, Violation

# Frameworks that scale the loss themselves: their backward replaces ``loss.backward()``.
_FRAMEWORK_BACKWARD_RECEIVERS = ("accelerator", "fabric", "engine", "model_engine", "deepspeed", "trainer", "strategy")
_FRAMEWORK_CALLS = frozenset({"scale_loss", "manual_backward", "backward_pass"})
_FRAMEWORK_MODULES = ("apex", "deepspeed", "accelerate", "lightning", "pytorch_lightning", "colossalai", "megatron")


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
        "import torch\nscaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    with torch.autocast('cuda'):\n"
        "        loss = model(x)\n    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n",
        "import torch\nfor x in loader:\n    with torch.autocast('cuda', dtype=torch.bfloat16):\n"
        "        loss = model(x)\n    loss.backward()\n    opt.step()\n",
        "import torch\ndef train(model, opt, loader, accelerator):\n    for x in loader:\n        with torch.autocast('cuda'):\n"
        "            loss = model(x)\n        accelerator.backward(loss)\n        opt.step()\n",
        "import torch\ndef train(model, opt, loader, loss_scaler):\n    for x in loader:\n        with torch.autocast('cuda'):\n"
        "            loss = model(x)\n        loss.backward()\n        opt.step()\n",
    )
    invalid = (
        "import torch\nfor x in loader:\n    with torch.autocast('cuda'):\n"
        "        loss = model(x)\n    loss.backward()\n    opt.step()\n",
        "import torch\ndef train(model, opt, loader):\n    for x, y in loader:\n"
        "        with torch.autocast(device_type='cuda', dtype=torch.float16):\n"
        "            out = model(x)\n        loss = crit(out, y)\n        loss.backward()\n        opt.step()\n",
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        if facts.scalers or self._scaled_elsewhere():
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
                if event.kind == EventKind.BACKWARD and self._loss_from_region(event, withs):
                    yield self.violation(
                        event.call,
                        f"`{facts.code(event.call)}` backpropagates a loss computed under float16 autocast and no "
                        "GradScaler exists in this file: small gradients underflow to zero in float16. Scale the loss "
                        "with `torch.amp.GradScaler` (or use bfloat16)",
                    )
                    break

    def _scaled_elsewhere(self) -> bool:
        facts = self.facts
        for record in facts.imports:
            for _, _, target in record.aliases:
                if target.split(".")[0] in _FRAMEWORK_MODULES:
                    return True
        for site in facts.calls:
            text = site.func_text or ""
            parts = text.split(".")
            if parts[-1] in _FRAMEWORK_CALLS:
                return True
            if parts[-1] == "backward" and len(parts) > 1 and any(
                w in p.lower() for p in parts[:-1] for w in _FRAMEWORK_BACKWARD_RECEIVERS
            ):
                return True
        for function in facts.functions:
            if any("scaler" in p.lower() for p in function.params):
                return True
        for ref in facts.references:
            if any("scaler" in p.lower() for p in ref.parts):
                return True
        return False

    def _loss_from_region(self, event: Event, withs: list[cst.With]) -> bool:
        """The backwarded tensor is computed in (or from values computed in) an fp16 region before it."""
        facts = self.facts
        if any(w in event.ctx.withs for w in withs):
            return True
        receiver = event.receiver
        if receiver is None or "." in receiver or "scale" in receiver.lower():
            return False
        scope = event.ctx.scope
        assigned_in_region: set[str] = set()
        for assignment in facts.assignments:
            if assignment.ctx.scope is scope and assignment.ctx.order < event.order and any(w in assignment.ctx.withs for w in withs):
                assigned_in_region.update(assignment.targets)
        if receiver in assigned_in_region:
            return True
        for assignment in facts.assignments:
            if assignment.ctx.scope is not scope or receiver not in assignment.targets or assignment.value is None:
                continue
            if assignment.ctx.order > event.order:
                continue
            for ref in facts.references_within(assignment.value):
                if ".".join(ref.parts) in assigned_in_region or ref.parts[0] in assigned_in_region:
                    return True
        return False
