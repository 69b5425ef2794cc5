from __future__ import annotations

from textwrap import dedent
from typing import Iterator

import amplint.scaler_protocol as protocol
from amplint.amp import Event, EventKind
from amplint.fix import NoFix
from amplint.model import FixSafety
from amplint.rules.base import Rule, Violation


class UnscaleMisuse(Rule):
    """
    ## What it does
    Finds `scaler.unscale_(optimizer)` called twice for one optimizer before `scaler.update()`
    on the same path (including once per micro-batch while `step`/`update` run once per
    accumulated batch), and `unscale_` called after `scaler.step(optimizer)`.

    ## Why is this bad?
    `unscale_` may run once per optimizer between two `update()` calls, and only before `step`.
    A second call raises `RuntimeError: unscale_() has already been called on this optimizer
    since the last update().`; a call after `step` raises `RuntimeError: unscale_() is being
    called after step().` Under gradient accumulation, `unscale_` belongs with the clip and the
    step, once per effective batch: unscaling a partial sum and then adding still-scaled
    gradients to it would mix scales even if torch allowed it.

    Calls on exclusive branches (`if clip: ... else: ...`), calls for different optimizers
    (`for opt in optimizers: scaler.unscale_(opt)`) and calls separated by `update()` are fine.

    ## Example
    ```python
    import torch

    scaler = torch.amp.GradScaler("cuda")
    for i, (x, y) in enumerate(loader):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_fn(model(x), y) / accum_steps
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        if (i + 1) % accum_steps == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
    ```

    ## Use instead
    ```python
    import torch

    scaler = torch.amp.GradScaler("cuda")
    for i, (x, y) in enumerate(loader):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_fn(model(x), y) / accum_steps
        scaler.scale(loss).backward()
        if (i + 1) % accum_steps == 0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
    ```

    ## Fix safety
    No fix: whether the second call should go, or the first move, depends on what each one
    guards (clipping, gradient-norm logging); amplint reports and leaves the choice to you.

    ## References
    - [Automatic Mixed Precision examples: gradient clipping](https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping)
    - [Gradient accumulation](https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-accumulation)
    - [torch.amp.GradScaler.unscale_](https://pytorch.org/docs/stable/amp.html#torch.amp.GradScaler.unscale_)
    - [AMP recipe](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    """

    code = "AMP010"
    name = "unscale-misuse"
    summary = "`scaler.unscale_` twice per optimizer before `update()`, or after `step`"
    fix_safety = FixSafety.NONE
    triggers = ("unscale_",)

    valid = (
        dedent("""\
            scaler = torch.amp.GradScaler('cuda')
            for x in loader:
                scaler.scale(model(x)).backward()
                scaler.unscale_(optimizer)
                clip(model)
                scaler.step(optimizer)
                scaler.update()
        """),
        dedent("""\
            scaler = torch.amp.GradScaler('cuda')
            for x in loader:
                scaler.scale(model(x)).backward()
                for opt in optimizers:
                    scaler.unscale_(opt)
                for opt in optimizers:
                    scaler.step(opt)
                scaler.update()
        """),
        dedent("""\
            scaler = torch.amp.GradScaler('cuda')
            for x in loader:
                scaler.scale(model(x)).backward()
                if clip_mode == 'norm':
                    scaler.unscale_(optimizer)
                elif clip_mode == 'value':
                    scaler.unscale_(optimizer)
                scaler.step(optimizer)
                scaler.update()
        """),
    )
    invalid = (
        dedent("""\
            scaler = torch.amp.GradScaler('cuda')
            for x in loader:
                scaler.scale(model(x)).backward()
                scaler.unscale_(optimizer)
                clip(model)
                scaler.unscale_(optimizer)
                scaler.step(optimizer)
                scaler.update()
        """),
        dedent("""\
            scaler = torch.amp.GradScaler('cuda')
            for x in loader:
                scaler.scale(model(x)).backward()
                scaler.step(optimizer)
                scaler.unscale_(optimizer)
                scaler.update()
        """),
        dedent("""\
            scaler = torch.amp.GradScaler('cuda')
            for x in loader:
                for micro in split(x):
                    scaler.scale(model(micro)).backward()
                    scaler.unscale_(optimizer)
                scaler.step(optimizer)
                scaler.update()
        """),
    )

    def check(self) -> Iterator[Violation]:
        for event in self.facts.timeline.events:
            if event.kind is not EventKind.UNSCALE or event.scaler is None or event.optimizer is None:
                continue
            if self.facts.scaling.is_disabled_scaler(event.scaler):
                continue
            message = self._twice(event) or self._after_step(event) or self._per_microbatch(event)
            if message:
                yield self.violation(event.call, message, fix=NoFix("choose which call to keep"))

    def _twice(self, event: Event) -> str | None:
        earlier = self.facts.scaling.still_in_force(event, EventKind.UNSCALE)
        if earlier is None:
            return None
        return (
            f"`{event.scaler}.unscale_({event.optimizer})` is already called on line "
            f"{self.facts.position(earlier.call).start.line} with no `{event.scaler}.update()` in between: raises "
            f"`{protocol.UNSCALE_TWICE}`"
        )

    def _after_step(self, event: Event) -> str | None:
        step = self.facts.scaling.still_in_force(event, EventKind.SCALER_STEP)
        if step is None:
            return None
        return (
            f"`{event.scaler}.unscale_({event.optimizer})` runs after `{event.scaler}.step({event.optimizer})` "
            f"(line {self.facts.position(step.call).start.line}) with no `update()` in between: raises "
            f"`{protocol.UNSCALE_AFTER_STEP}`; unscale before the step"
        )

    def _per_microbatch(self, event: Event) -> str | None:
        """``unscale_`` in the micro-batch loop while ``update()`` runs once per accumulated batch."""
        facts = self.facts
        loop = facts.training.iteration_loop(event.ctx)
        if loop is None or facts.scaling.optimizer_rebound_per_pass(event):
            return None
        scaler = event.scaler
        updates = facts.scaling.scaler_updates_on_path(event)
        inside = [u for u in updates if loop in u.ctx.loops]
        if not inside:
            after = [u for u in updates if facts.control_flow.reaches(event.ctx, u.ctx)]
            if not after:
                return None
            return (
                f"`{scaler}.unscale_({event.optimizer})` runs on every pass of the micro-batch loop but "
                f"`{scaler}.update()` (line {facts.position(after[0].call).start.line}) only after it: the second "
                f"pass raises `{protocol.UNSCALE_TWICE}`; unscale once, before clipping and `step`"
            )
        for update in inside:
            boundary = facts.training.accumulation_branch(update.ctx)
            if boundary is None or facts.tree.under_same_condition(event.ctx, boundary):
                return None
            if not facts.tree.contains(loop.node, boundary.node):
                return None
        test = facts.code(boundary.node.test)  # type: ignore[attr-defined]
        return (
            f"`{scaler}.unscale_({event.optimizer})` runs every micro-batch but `{scaler}.update()` only under "
            f"`if {test}:`: the second micro-batch raises `{protocol.UNSCALE_TWICE}`; "
            f"move it under the same condition, before clipping"
        )
