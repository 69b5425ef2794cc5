from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import libcst as cst

from amplint.fix import edits as E
from amplint.amp import BACKWARD_KINDS, Event, EventKind, FileFacts
from amplint.semantic import Loop
from amplint.fix import Fix, NoFix
from amplint.model import FixSafety
from amplint.rules.base import SCALER_TRIGGERS, Invalid, Rule, Violation


@dataclass
class Iteration:
    """The events of one training iteration: one pass of a loop that runs a backward, or the
    body of a per-step function (``train_step``) that does backward and step itself."""

    loop: Loop | None
    events: list[Event]


def iteration_of(facts: FileFacts, event: Event) -> Iteration | None:
    """The iteration ``event`` belongs to, when the function that holds it clearly owns one."""
    scope_events = facts.events_by_scope.get(event.ctx.scope, [])
    loop = facts.iteration_loop(event.ctx)
    if loop is not None:
        return Iteration(loop, [e for e in scope_events if loop in e.ctx.loops])
    if any(l in facts.backward_loops for l in event.ctx.loops):
        return None
    has_backward = any(e.kind in BACKWARD_KINDS and e.order < event.order for e in scope_events)
    if not has_backward:
        return None
    return Iteration(None, list(scope_events))


def same_iteration(facts: FileFacts, a: Event, b: Event) -> bool:
    return a.ctx.scope is b.ctx.scope and facts.iteration_loop(a.ctx) is facts.iteration_loop(b.ctx)


class ScalerUpdateMissingOrMisordered(Rule):
    """
    ## What it does
    Finds a `scaler.step(optimizer)` with no `scaler.update()` after it in the training
    iteration, a `scaler.update()` that runs before the iteration's `scaler.step(...)`, and a
    `scaler.update()` between the steps of two optimizers that share one backward.

    ## Why is this bad?
    `update()` adapts the scale and resets the per-optimizer state. Without it the scale never
    backs off after an overflow (every later step is skipped) nor grows, and the next
    `scaler.step(optimizer)` raises `RuntimeError: step() has already been called since the last
    update().` An `update()` before any step raises `AssertionError: No inf checks were recorded
    prior to update.` An `update()` between the steps of two optimizers changes the scale while
    the second optimizer's gradients still carry the old one.

    The rule only reports a missing `update()` where the function that steps clearly owns the
    iteration: the step sits in the training loop of that function, or in a per-step function
    that also runs the backward, and no `update()` follows in the iteration, in a same-file
    helper called after the step, or in a same-file caller. Helpers that receive the scaler
    (`timm`'s `NativeScaler`, Lightning, detectron2) are trusted.

    ## Example
    ```python
    import torch

    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
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
    The fix is safe when unambiguous: a missing `scaler.update()` is inserted right after the
    iteration's last `scaler.step(...)` (inside its `if`, if any); a misplaced one is moved there
    (or dropped when one already follows the last step). No fix when the steps sit in different
    blocks or the statements are not plain lines.

    ## References
    - [Automatic Mixed Precision examples](https://pytorch.org/docs/stable/notes/amp_examples.html)
    - [Working with multiple models, losses, and optimizers](https://pytorch.org/docs/stable/notes/amp_examples.html#working-with-multiple-models-losses-and-optimizers)
    - [torch.amp.GradScaler.update](https://pytorch.org/docs/stable/amp.html#torch.amp.GradScaler.update)
    - [AMP recipe](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    """

    code = "AMP009"
    name = "scaler-update-missing-or-misordered"
    summary = "`scaler.step` without a following `scaler.update()`, or `update()` before/between steps"
    fix_safety = FixSafety.SOMETIMES
    triggers = SCALER_TRIGGERS

    valid = (
        (
            "scaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    scaler.scale(model(x)).backward()\n"
            "    scaler.step(optimizer)\n    scaler.update()\n"
        ),
        (
            "scaler = torch.amp.GradScaler('cuda')\nfor i, x in enumerate(loader):\n    scaler.scale(model(x)).backward()\n"
            "    if (i + 1) % accum == 0:\n        scaler.step(optimizer)\n        scaler.update()\n"
        ),
        (
            "class NativeScaler:\n    def __call__(self, loss, optimizer):\n        self._scaler.scale(loss).backward()\n"
            "        self._scaler.step(optimizer)\n        self._scaler.update()\n"
        ),
        (
            "scaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    scaler.scale(d(x)).backward()\n"
            "    scaler.step(opt_d)\n    scaler.update()\n    scaler.scale(g(x)).backward()\n    scaler.step(opt_g)\n"
            "    scaler.update()\n"
        ),
        "def optimizer_step(self, optimizer):\n    self.scaler.step(optimizer)\n",
    )
    invalid = (
        Invalid(
            "scaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    scaler.scale(model(x)).backward()\n    scaler.step(optimizer)\n",
            fixed=(
                "scaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    scaler.scale(model(x)).backward()\n"
                "    scaler.step(optimizer)\n    scaler.update()\n"
            ),
        ),
        Invalid(
            (
                "scaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    scaler.scale(model(x)).backward()\n"
                "    scaler.update()\n    scaler.step(optimizer)\n"
            ),
            fixed=(
                "scaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    scaler.scale(model(x)).backward()\n"
                "    scaler.step(optimizer)\n    scaler.update()\n"
            ),
        ),
        Invalid(
            (
                "scaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    scaler.scale(model(x)).backward()\n"
                "    scaler.step(opt_a)\n    scaler.update()\n    scaler.step(opt_b)\n"
            ),
            fixed=(
                "scaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    scaler.scale(model(x)).backward()\n"
                "    scaler.step(opt_a)\n    scaler.step(opt_b)\n    scaler.update()\n"
            ),
        ),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        reported_updates: set[int] = set()
        for events in facts.events_by_scope.values():
            for event in events:
                if event.kind == EventKind.UPDATE and event.scaler is not None and not self._disabled(event.scaler):
                    violation = self._misordered_update(event, events)
                    if violation is not None:
                        reported_updates.add(id(event))
                        yield violation
            done: set[tuple[str, int]] = set()
            for event in events:
                if event.kind == EventKind.SCALER_STEP and event.scaler is not None and not self._disabled(event.scaler):
                    violation = self._missing_update(event, done)
                    if violation is not None:
                        yield violation

    def _disabled(self, scaler: str) -> bool:
        info = self.facts.scalers.get(scaler)
        return info is not None and info.provably_disabled

    # -- update() before the step, or between two optimizers' steps
    def _misordered_update(self, update: Event, events: list[Event]) -> Violation | None:
        facts = self.facts
        scaler = update.scaler
        steps = [
            e for e in events
            if e.kind == EventKind.SCALER_STEP and e.scaler == scaler and same_iteration(facts, e, update) and facts.on_path(e.ctx, update.ctx)
        ]
        if not steps or facts.iteration_loop(update.ctx) is None and not any(e.kind in BACKWARD_KINDS for e in events):
            return None
        before = [s for s in steps if s.order < update.order]
        after = [s for s in steps if s.order > update.order]
        if not after:
            return None
        # A scaled backward between this update and the next step starts a new cycle (a GAN with one
        # scaler: scale/step/update for D, then scale/step/update for G): correct.
        if any(
            e.kind in BACKWARD_KINDS and update.order < e.order < after[0].order and facts.on_path(e.ctx, update.ctx)
            for e in events
        ):
            return None
        if not set(update.ctx.branches) <= set(after[0].ctx.branches):
            return None  # ``if step > 0: scaler.update()`` and the like: a guarded update
        if not before:
            acc = facts.accumulation_branch(after[0].ctx)
            if acc is not None and not facts.under_same_condition(update.ctx, acc):
                return None  # AMP012: update per micro-batch, step under the accumulation test
            if facts.iteration_loop(update.ctx) is None:
                return None  # straight-line code in a helper: the caller may have stepped
            message = (
                f"`{scaler}.update()` runs before `{scaler}.step({after[0].optimizer or '...'})` (line "
                f"{facts.position(after[0].call).start.line}) in this iteration: it raises "
                f"`AssertionError: No inf checks were recorded prior to update.`; call it after the last step"
            )
        else:
            first = before[-1]
            if all(s.optimizer == first.optimizer for s in after):
                return None
            message = (
                f"`{scaler}.update()` runs between `{scaler}.step({first.optimizer})` and "
                f"`{scaler}.step({after[0].optimizer})` (line {facts.position(after[0].call).start.line}): it changes "
                f"the scale while the second optimizer's gradients carry the old one; update once after the last step"
            )
        return self.violation(update.call, message, fix=self._move_fix(update, steps, events))

    def _move_fix(self, update: Event, steps: list[Event], events: list[Event]) -> Fix | NoFix:
        facts = self.facts
        last = steps[-1]
        stmt = E.movable_statement(facts, update)
        anchor = E.anchor_statement(last)
        if stmt is None or anchor is None:
            return NoFix("the update or the step is not a plain statement of its own")
        later = [
            e for e in events
            if e.kind == EventKind.UPDATE and e.scaler == update.scaler and e.order > last.order and facts.on_path(e.ctx, last.ctx)
            and same_iteration(facts, e, last)
        ]
        if later:
            return Fix.safe(f"Remove this `{update.scaler}.update()` (one follows the last step)", {stmt: cst.RemovalSentinel.REMOVE})
        if not all(facts.on_path(s.ctx, last.ctx) and facts.statement_block(s.ctx.stmt) == facts.statement_block(anchor) for s in steps if s.ctx.stmt is not None):
            return NoFix("the steps sit in different blocks")
        return Fix.safe(
            f"Move `{update.scaler}.update()` after the last `{update.scaler}.step(...)`",
            {stmt: cst.RemovalSentinel.REMOVE, anchor: E.insert_after(anchor, E.movable(stmt))},
        )

    # -- step() with no update() after it
    def _missing_update(self, step: Event, done: set[tuple[str, int]]) -> Violation | None:
        facts = self.facts
        scaler = step.scaler
        assert scaler is not None
        iteration = iteration_of(facts, step)
        if iteration is None:
            return None
        key = (scaler, id(iteration.loop) if iteration.loop is not None else 0)
        if key in done:
            return None
        steps = [
            e for e in iteration.events
            if e.kind == EventKind.SCALER_STEP and e.scaler == scaler and facts.on_path(e.ctx, step.ctx)
        ]
        updates = [e for e in iteration.events if e.kind == EventKind.UPDATE and facts.on_path(e.ctx, step.ctx)]
        stepped_keys = {e.scaler for e in iteration.events if e.kind == EventKind.SCALER_STEP}
        if any(u.scaler == scaler or u.scaler not in stepped_keys for u in updates):
            return None  # an update in the iteration (a misplaced one is reported at the update)
        if self._update_reached_elsewhere(step, iteration):
            return None
        last = steps[-1]
        if step is not last:
            return None
        done.add(key)
        where = "in this iteration" if iteration.loop is not None else "in this per-step function"
        message = (
            f"`{scaler}.step({step.optimizer or '...'})` has no `{scaler}.update()` after it {where}: the scale "
            f"never adapts and the next `{scaler}.step(...)` raises `RuntimeError: step() has already been "
            f"called since the last update().`"
        )
        anchor = E.anchor_statement(last)
        if anchor is None:
            return self.violation(step.call, message, fix=NoFix("the step is not a plain statement of its own"))
        if not all(facts.statement_block(s.ctx.stmt) == facts.statement_block(anchor) for s in steps if s.ctx.stmt is not None):
            return self.violation(step.call, message, fix=NoFix("the steps sit in different blocks"))
        outside = [
            e for e in facts.events_by_scope.get(step.ctx.scope, [])
            if e.kind == EventKind.UPDATE and e.scaler == scaler and e.order > last.order and e not in iteration.events
        ]
        if outside:
            # ``scaler.update()`` once per epoch after the batch loop: move it into the iteration
            # (inserting a second one would make the epoch-level one assert).
            stmt = E.movable_statement(facts, outside[0]) if len(outside) == 1 else None
            if stmt is None:
                return self.violation(step.call, message, fix=NoFix("an update() after the loop must move into it"))
            fix = Fix.safe(
                f"Move `{scaler}.update()` after the last step of the iteration",
                {stmt: cst.RemovalSentinel.REMOVE, anchor: E.insert_after(anchor, E.movable(stmt))},
            )
            return self.violation(step.call, message, fix=fix)
        new = E.parse_statement(f"{scaler}.update()\n")
        fix = Fix.safe(f"Insert `{scaler}.update()` after the last step", {anchor: E.insert_after(anchor, new)})
        return self.violation(step.call, message, fix=fix)

    def _update_reached_elsewhere(self, step: Event, iteration: Iteration) -> bool:
        """An update may run after the step through code this file does not show as an event."""
        facts = self.facts
        scaler = step.scaler or ""
        scope = step.ctx.scope
        for site in facts.calls:
            if site.ctx.scope is not scope or site.ctx.order <= step.order:
                continue
            if iteration.loop is not None and iteration.loop not in site.ctx.loops:
                continue
            if facts.calls_into(site, facts.updating_functions):
                return True
            if any(facts.code(arg.value) == scaler for arg in site.node.args):
                return True  # the scaler is handed to a helper that may update it
        function = facts.function_of(scope)
        callers = [site for site in facts.calls if function is not None and any(f is function for f in facts.called_functions(site))]
        for site in callers:
            # A same-file caller updates after calling this function (composer's retry loop around
            # ``_train_batch``; a ``train_step`` whose caller owns the update).
            for event in facts.events_by_scope.get(site.ctx.scope, []):
                if event.kind == EventKind.UPDATE and event.order > site.ctx.order:
                    return True
            if any(s.ctx.scope is site.ctx.scope and s.ctx.order > site.ctx.order and facts.calls_into(s, facts.updating_functions) for s in facts.calls):
                return True
        if iteration.loop is None:
            if function is None:
                return True  # module-level code with no loop: not an iteration we can see
            if not callers and function.node.name.value not in facts.PER_STEP_NAMES:
                return True  # not visibly a per-step function: the update may live with its caller
            if function.node.name.value in ("optimizer_step", "step", "_optimizer_step"):
                return True  # framework hooks that step only; the update belongs to their caller
        return False
