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
        facts = self.facts
        for event in facts.timeline.events:
            if event.kind is not EventKind.UNSCALE or event.scaler is None or event.optimizer is None:
                continue
            if facts.scaling.is_disabled_scaler(event.scaler):
                continue
            message = self._in_one_pass(event) or self._on_the_next_pass(event)
            if message:
                yield self.violation(event.call, message, fix=NoFix("choose which call to keep"))

    def _in_one_pass(self, event: Event) -> str | None:
        """The protocol's verdict on one path through the function, in one iteration."""
        for found in self.facts.protocol.misuses_at(event):
            if found.misuse.code != self.code or found.before.stage_by is None:
                continue
            line = self.facts.position(found.before.stage_by.call).start.line
            if found.misuse is protocol.UNSCALED_TWICE:
                return (
                    f"`{event.scaler}.unscale_({event.optimizer})` is already called on line {line} with no "
                    f"`{event.scaler}.update()` in between: raises `{protocol.UNSCALE_TWICE}`"
                )
            return (
                f"`{event.scaler}.unscale_({event.optimizer})` runs after `{event.scaler}.step({event.optimizer})` "
                f"(line {line}) with no `update()` in between: raises `{protocol.UNSCALE_AFTER_STEP}`; unscale before the step"
            )
        return None

    def _on_the_next_pass(self, event: Event) -> str | None:
        """A misuse only the next pass of a loop meets: ``unscale_`` once per micro-batch while
        ``update()`` runs once per accumulated batch, or a pass that leaves before ``update()``.
        Only where this function updates the scaler in that loop or after it: an update it cannot
        see (a hook, the caller) may run between the passes."""
        facts = self.facts
        loop = facts.training.iteration_loop(event.ctx)
        if loop is None:
            return None
        updates = [u for u in facts.iterations.events_of(event.ctx.scope, EventKind.UPDATE, event.scaler)
                   if facts.control_flow.reaches(event.ctx, u.ctx, across_iterations=True)]
        if not updates or facts.protocol.misuses_at(event):
            return None
        if any(skip.unscaled and skip.backward.scaler == event.scaler and loop in skip.ctx.loops for skip in facts.overflow.overflow_skips):
            return None  # AMP009 reports the overflow check that skips the update, and says this
        for found in facts.protocol.misuses_at(event, across_iterations=True):
            earlier = found.before.stage_by
            if found.misuse is not protocol.UNSCALED_TWICE or earlier is None or loop not in earlier.ctx.loops:
                continue
            return self._next_pass_message(event, loop, updates)
        return None

    def _next_pass_message(self, event: Event, loop, updates: list[Event]) -> str:
        facts = self.facts
        scaler, optimizer = event.scaler, event.optimizer
        inside = [u for u in updates if loop in u.ctx.loops]
        if not inside:
            return (
                f"`{scaler}.unscale_({optimizer})` runs on every pass of the micro-batch loop but "
                f"`{scaler}.update()` (line {facts.position(updates[0].call).start.line}) only after it: the second "
                f"pass raises `{protocol.UNSCALE_TWICE}`; unscale once, before clipping and `step`"
            )
        boundary = facts.training.accumulation_branch(inside[0].ctx)
        if boundary is not None and not facts.tree.contains(boundary.node, event.call):
            test = facts.code(boundary.node.test)  # type: ignore[attr-defined]
            return (
                f"`{scaler}.unscale_({optimizer})` runs every micro-batch but `{scaler}.update()` only under "
                f"`if {test}:`: the second micro-batch raises `{protocol.UNSCALE_TWICE}`; "
                f"move it under the same condition, before clipping"
            )
        return (
            f"A pass of this loop can end after `{scaler}.unscale_({optimizer})` without reaching "
            f"`{scaler}.update()` (line {facts.position(inside[0].call).start.line}): the next pass's "
            f"`unscale_` raises `{protocol.UNSCALE_TWICE}`; let `step` and `update()` run on every pass "
            f"(`{scaler}.step` already skips steps with inf/NaN gradients)"
        )
