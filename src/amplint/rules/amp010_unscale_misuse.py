from __future__ import annotations

from typing import Iterator

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
        (
            "scaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    scaler.scale(model(x)).backward()\n"
            "    scaler.unscale_(optimizer)\n    clip(model)\n    scaler.step(optimizer)\n    scaler.update()\n"
        ),
        (
            "scaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    scaler.scale(model(x)).backward()\n"
            "    for opt in optimizers:\n        scaler.unscale_(opt)\n    for opt in optimizers:\n        scaler.step(opt)\n"
            "    scaler.update()\n"
        ),
        (
            "scaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    scaler.scale(model(x)).backward()\n"
            "    if clip_mode == 'norm':\n        scaler.unscale_(optimizer)\n    elif clip_mode == 'value':\n"
            "        scaler.unscale_(optimizer)\n    scaler.step(optimizer)\n    scaler.update()\n"
        ),
    )
    invalid = (
        (
            "scaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    scaler.scale(model(x)).backward()\n"
            "    scaler.unscale_(optimizer)\n    clip(model)\n    scaler.unscale_(optimizer)\n    scaler.step(optimizer)\n"
            "    scaler.update()\n"
        ),
        (
            "scaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    scaler.scale(model(x)).backward()\n"
            "    scaler.step(optimizer)\n    scaler.unscale_(optimizer)\n    scaler.update()\n"
        ),
        (
            "scaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    for micro in split(x):\n"
            "        scaler.scale(model(micro)).backward()\n        scaler.unscale_(optimizer)\n"
            "    scaler.step(optimizer)\n    scaler.update()\n"
        ),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        for events in facts.events_by_scope.values():
            for event in events:
                if event.kind != EventKind.UNSCALE or event.scaler is None or event.optimizer is None:
                    continue
                info = facts.scalers.get(event.scaler)
                if info is not None and info.provably_disabled:
                    continue
                message = self._twice(event, events) or self._after_step(event, events) or self._per_microbatch(event, events)
                if message:
                    yield self.violation(event.call, message, fix=NoFix("choose which call to keep"))

    def _no_update_between(self, first: Event, second: Event, events: list[Event]) -> bool:
        facts = self.facts
        return not any(
            e.kind == EventKind.UPDATE
            and e.scaler == second.scaler
            and first.order < e.order < second.order
            and facts.on_path(e.ctx, first.ctx)
            and facts.on_path(e.ctx, second.ctx)
            for e in events
        )

    def _twice(self, event: Event, events: list[Event]) -> str | None:
        facts = self.facts
        for earlier in events:
            if earlier.order >= event.order:
                break
            if (
                earlier.kind == EventKind.UNSCALE
                and earlier.scaler == event.scaler
                and earlier.optimizer == event.optimizer
                and facts.on_path(earlier.ctx, event.ctx)
                and self._no_update_between(earlier, event, events)
                and not self._rebinds_optimizer(earlier, event)
            ):
                return (
                    f"`{event.scaler}.unscale_({event.optimizer})` is already called on line "
                    f"{facts.position(earlier.call).start.line} with no `{event.scaler}.update()` in between: raises "
                    f"`RuntimeError: unscale_() has already been called on this optimizer since the last update().`"
                )
        return None

    def _rebinds_optimizer(self, first: Event, second: Event) -> bool:
        """``for opt in optimizers`` around one of the calls: each pass unscales a different optimizer."""
        name = (first.optimizer or "").split(".")[0]
        for event in (first, second):
            if any(name in loop.target_names for loop in event.ctx.loops):
                return True
        return False

    def _after_step(self, event: Event, events: list[Event]) -> str | None:
        facts = self.facts
        for earlier in events:
            if earlier.order >= event.order:
                break
            if (
                earlier.kind == EventKind.SCALER_STEP
                and earlier.scaler == event.scaler
                and earlier.optimizer == event.optimizer
                and facts.on_path(earlier.ctx, event.ctx)
                and self._no_update_between(earlier, event, events)
                and not self._rebinds_optimizer(earlier, event)
            ):
                return (
                    f"`{event.scaler}.unscale_({event.optimizer})` runs after `{event.scaler}.step({event.optimizer})` "
                    f"(line {facts.position(earlier.call).start.line}) with no `update()` in between: raises "
                    f"`RuntimeError: unscale_() is being called after step().`; unscale before the step"
                )
        return None

    def _per_microbatch(self, event: Event, events: list[Event]) -> str | None:
        """``unscale_`` in the micro-batch loop while ``update()`` runs once per accumulated batch."""
        facts = self.facts
        loop = facts.iteration_loop(event.ctx)
        if loop is None:
            return None
        name = (event.optimizer or "").split(".")[0]
        if any(name in l.target_names for l in event.ctx.loops):
            return None
        scaler = event.scaler
        updates = [e for e in events if e.kind == EventKind.UPDATE and e.scaler == scaler and facts.on_path(e.ctx, event.ctx)]
        inside = [u for u in updates if loop in u.ctx.loops]
        if not inside:
            outside_after = [u for u in updates if u.order > event.order]
            if not outside_after:
                return None
            return (
                f"`{scaler}.unscale_({event.optimizer})` runs on every pass of the micro-batch loop but "
                f"`{scaler}.update()` (line {facts.position(outside_after[0].call).start.line}) only after it: the second "
                f"pass raises `RuntimeError: unscale_() has already been called on this optimizer since the last "
                f"update().`; unscale once, before clipping and `step`"
            )
        for update in inside:
            acc = facts.accumulation_branch(update.ctx)
            if acc is None or facts.under_same_condition(event.ctx, acc):
                return None
            if not facts.contains(loop.node, acc.node):
                return None
        test = facts.code(acc.node.test)  # type: ignore[union-attr, attr-defined]
        return (
            f"`{scaler}.unscale_({event.optimizer})` runs every micro-batch but `{scaler}.update()` only under "
            f"`if {test}:`: the second micro-batch raises `RuntimeError: unscale_() has already been called on this "
            f"optimizer since the last update().`; move it under the same condition, before clipping"
        )
