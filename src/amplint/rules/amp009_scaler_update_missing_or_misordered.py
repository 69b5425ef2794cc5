from __future__ import annotations

from textwrap import dedent
from functools import cached_property
from typing import Iterator

import libcst as cst

import amplint.scaler_protocol as protocol
from amplint.amp import BACKWARD_KINDS, Event, EventKind
from amplint.amp.iterations import Iteration
from amplint.fix import Fix, NoFix
import amplint.fix.edits as E
from amplint.model import FixSafety
from amplint.rules.base import SCALER_TRIGGERS, Invalid, Rule, Violation

K = EventKind


class ScalerUpdateMissingOrMisordered(Rule):
    """
    ## What it does
    Finds a `scaler.step(optimizer)` with no `scaler.update()` after it in the training
    iteration, a `scaler.update()` that runs before the iteration's `scaler.step(...)`, a
    `scaler.update()` between the steps of two optimizers that share one backward (also inside a
    `for optimizer in optimizers:` loop), and a hand-written check on non-finite gradients
    (`if not torch.isfinite(grad_norm): continue`) that skips both `step` and `update()`.

    ## Why is this bad?
    `update()` adapts the scale and resets the per-optimizer state. Without it the scale never
    backs off after an overflow (every later step is skipped) nor grows, and the next
    `scaler.step(optimizer)` raises `RuntimeError: step() has already been called since the last
    update().` An `update()` before any step raises `AssertionError: No inf checks were recorded
    prior to update.` An `update()` between the steps of two optimizers changes the scale while
    the second optimizer's gradients still carry the old one. Skipping `update()` on an overflow
    keeps the scale that overflowed, so the next steps overflow and are skipped as well.

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
    (or dropped when one already follows the last step on every path). No fix when the steps sit
    in different blocks, when another `update()` follows the last step on some paths only (`if i %
    log_every == 0: scaler.update()`), or when the statements are not plain lines.

    ## References
    - [Automatic Mixed Precision examples](https://pytorch.org/docs/stable/notes/amp_examples.html)
    - [Working with multiple models, losses, and optimizers](https://pytorch.org/docs/stable/notes/amp_examples.html#working-with-multiple-models-losses-and-optimizers)
    - [torch.amp.GradScaler.update](https://pytorch.org/docs/stable/amp.html#torch.amp.GradScaler.update)
    - [AMP recipe](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    """

    code = "AMP009"
    name = "scaler-update-missing-or-misordered"
    summary = "`scaler.step` without a following `scaler.update()`, or `update()` before/between steps"
    fix_safety = FixSafety.SAFE
    fix_withheld = "when an overflow check skips the update or the update runs under a condition inside the loop"
    triggers = SCALER_TRIGGERS

    valid = (
        dedent("""\
        scaler = torch.amp.GradScaler('cuda')
        for x in loader:
            scaler.scale(model(x)).backward()
            scaler.step(optimizer)
            scaler.update()
        """),
        dedent("""\
        scaler = torch.amp.GradScaler('cuda')
        for i, x in enumerate(loader):
            scaler.scale(model(x)).backward()
            if (i + 1) % accum == 0:
                scaler.step(optimizer)
                scaler.update()
        """),
        dedent("""\
        class NativeScaler:
            def __call__(self, loss, optimizer):
                self._scaler.scale(loss).backward()
                self._scaler.step(optimizer)
                self._scaler.update()
        """),
        dedent("""\
        scaler = torch.amp.GradScaler('cuda')
        for x in loader:
            scaler.scale(d(x)).backward()
            scaler.step(opt_d)
            scaler.update()
            scaler.scale(g(x)).backward()
            scaler.step(opt_g)
            scaler.update()
        """),
        dedent("""\
        def optimizer_step(self, optimizer):
            self.scaler.step(optimizer)
        """),
    )
    invalid = (
        # The update after the step runs on some iterations only: neither removing the early
        # update nor moving it after the step is right, so no fix.
        Invalid(
            dedent("""\
            import torch

            def train(model, loader, optimizer, log_every):
                scaler = torch.amp.GradScaler("cuda")
                for i, batch in enumerate(loader):
                    with torch.autocast("cuda", dtype=torch.float16):
                        loss = model(batch)
                    scaler.scale(loss).backward()
                    scaler.update()
                    scaler.step(optimizer)
                    if i % log_every == 0:
                        scaler.update()
                    optimizer.zero_grad()
            """),
        ),
        Invalid(
            dedent("""\
            scaler = torch.amp.GradScaler('cuda')
            for x in loader:
                scaler.scale(model(x)).backward()
                scaler.step(optimizer)
            """),
            fixed=dedent("""\
            scaler = torch.amp.GradScaler('cuda')
            for x in loader:
                scaler.scale(model(x)).backward()
                scaler.step(optimizer)
                scaler.update()
            """),
        ),
        Invalid(
            dedent("""\
            scaler = torch.amp.GradScaler('cuda')
            for x in loader:
                scaler.scale(model(x)).backward()
                scaler.update()
                scaler.step(optimizer)
            """),
            fixed=dedent("""\
            scaler = torch.amp.GradScaler('cuda')
            for x in loader:
                scaler.scale(model(x)).backward()
                scaler.step(optimizer)
                scaler.update()
            """),
        ),
        Invalid(
            dedent("""\
            scaler = torch.amp.GradScaler('cuda')
            for x in loader:
                scaler.scale(model(x)).backward()
                scaler.step(opt_a)
                scaler.update()
                scaler.step(opt_b)
            """),
            fixed=dedent("""\
            scaler = torch.amp.GradScaler('cuda')
            for x in loader:
                scaler.scale(model(x)).backward()
                scaler.step(opt_a)
                scaler.step(opt_b)
                scaler.update()
            """),
        ),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        for events in facts.timeline.events_by_scope.values():
            for update in events:
                if update.kind is K.UPDATE and self._enabled(update):
                    violation = self._misordered_update(update, events) or self._update_per_optimizer(update, events)
                    if violation is not None:
                        yield violation
            done: set[tuple[str, int]] = set()
            for skip in facts.overflow.overflow_skips:
                if skip.ctx.scope is events[0].ctx.scope:
                    yield self._overflow_skip(skip)
            for step in events:
                if step.kind is K.SCALER_STEP and self._enabled(step):
                    violation = self._missing_update(step, done)
                    if violation is not None:
                        yield violation

    def _enabled(self, event: Event) -> bool:
        return event.scaler is not None and not self.facts.scaling.scaler_provably_disabled(event.scaler, event.ctx.scope)

    # -- update() before the step, or between two optimizers' steps
    def _misordered_update(self, update: Event, events: list[Event]) -> Violation | None:
        """The GradScaler protocol's two verdicts on an ``update()`` in the iteration: it runs
        with no step recorded while a step follows, or it changes the scale between two
        optimizers' steps, so the later one unscales by the wrong scale."""
        facts = self.facts
        scaler = update.scaler
        steps = facts.iterations.steps_beside(update)
        if not steps or facts.training.iteration_loop(update.ctx) is None and not any(e.kind in BACKWARD_KINDS for e in events):
            return None
        flow = facts.control_flow
        rescaled = self._rescaled_by.get(update, [])
        after = rescaled or [s for s in steps if flow.reaches(update.ctx, s.ctx)]
        if not after:
            return None
        if not set(update.ctx.branches) <= set(after[0].ctx.branches):
            return None  # ``if step > 0: scaler.update()`` and the like: a guarded update
        next_line = facts.position(after[0].call).start.line
        if rescaled:
            before = [s for s in steps if flow.reaches(s.ctx, update.ctx) and s.optimizer != after[0].optimizer]
            first = before[-1].optimizer if before else "..."
            message = (
                f"`{scaler}.update()` runs between `{scaler}.step({first})` and "
                f"`{scaler}.step({after[0].optimizer})` (line {next_line}): it changes "
                f"the scale while the second optimizer's gradients carry the old one; update once after the last step"
            )
        elif any(found.misuse is protocol.UPDATED_WITHOUT_STEP for found in facts.protocol.misuses_at(update)):
            if facts.iterations.backward_between(update, after[0]):
                return None  # a new scale/step/update cycle starts before the next step
            acc = facts.training.accumulation_branch(after[0].ctx)
            if acc is not None and not facts.tree.under_same_condition(update.ctx, acc):
                return None  # AMP012: update per micro-batch, step under the accumulation test
            if facts.training.iteration_loop(update.ctx) is None:
                return None  # straight-line code in a helper: the caller may have stepped
            message = (
                f"`{scaler}.update()` runs before `{scaler}.step({after[0].optimizer or '...'})` (line "
                f"{next_line}) in this iteration: it raises "
                f"`{protocol.UPDATE_WITHOUT_STEP}`; call it after the last step"
            )
        else:
            return None
        return self.violation(update.call, message, fix=self._move_fix(update, steps))

    @cached_property
    def _rescaled_by(self) -> dict[Event, list[Event]]:
        """Each ``update()`` with the later steps that unscale gradients made with the scale it changed."""
        out: dict[Event, list[Event]] = {}
        for step in self.facts.timeline.events:
            if step.kind is not K.SCALER_STEP:
                continue
            for found in self.facts.protocol.misuses_at(step):
                update = found.before.stage_by
                if found.misuse is protocol.RESCALED and update is not None and update.kind is K.UPDATE and step not in out.get(update, []):
                    out.setdefault(update, []).append(step)
        return out

    def _overflow_skip(self, skip) -> Violation:
        scaler = skip.backward.scaler
        if skip.unscaled:
            harm = (f"after an overflow the next `{scaler}.unscale_(...)` raises `RuntimeError: unscale_() has already "
                    "been called on this optimizer since the last update().`")
        else:
            harm = "on an overflow the scale never backs off, so every later step overflows at the same scale and is skipped too"
        message = (
            f"This check skips `{scaler}.step(...)` and `{scaler}.update()` when the gradients are not finite: {harm}; "
            f"`{scaler}.step` already skips steps with inf/NaN gradients, and `{scaler}.update()` must run"
        )
        return self.violation(skip.test.test, message, fix=NoFix(
            f"call `{scaler}.step(...)` and `{scaler}.update()` before skipping, or drop the check"
        ))

    def _update_per_optimizer(self, update: Event, events: list[Event]) -> Violation | None:
        loop = self.facts.iterations.optimizer_loop_updating(update)
        if loop is None:
            return None
        message = (
            f"`{update.scaler}.update()` runs inside the loop over optimizers (line {self.facts.position(loop.node).start.line}): "
            f"after the first optimizer's step it changes the scale and resets the per-optimizer state, so "
            f"`{update.scaler}.step(...)` of the next one unscales gradients that carry the old scale (or were already "
            "unscaled); update once after the loop"
        )
        stmt = E.movable_statement(self.facts, update)
        if stmt is None or any(not self.facts.tree.contains(b.node, loop.node) for b in update.ctx.branches):
            fix = NoFix("the update runs under a condition inside the loop: move it after the loop under that condition")
        else:
            fix = Fix.safe(f"Move `{update.scaler}.update()` after the loop over optimizers", E.move_after(loop.node, stmt))
        return self.violation(update.call, message, fix=fix)

    def _move_fix(self, update: Event, steps: list[Event]) -> Fix | NoFix:
        facts = self.facts
        last = steps[-1]
        stmt = E.movable_statement(facts, update)
        anchor = E.anchor_statement(last)
        if stmt is None or anchor is None:
            return NoFix("the update or the step is not a plain statement of its own")
        if facts.iterations.update_on_every_path_after(last):
            return Fix.safe(f"Remove this `{update.scaler}.update()` (one follows the last step)", {stmt: cst.RemovalSentinel.REMOVE})
        if any(u is not update and facts.control_flow.reaches(last.ctx, u.ctx)
               for u in facts.iterations.events_of(last.ctx.scope, K.UPDATE, update.scaler)):
            return NoFix("another `update()` follows the last step on some paths only: keep exactly one after each step")
        if not all(facts.control_flow.may_run_together(s.ctx, last.ctx) for s in steps if s.ctx.stmt is not None) or not self._one_block(steps):
            return NoFix("the steps sit in different blocks")
        return Fix.safe(
            f"Move `{update.scaler}.update()` after the last `{update.scaler}.step(...)`",
            {stmt: cst.RemovalSentinel.REMOVE, anchor: E.insert_after(anchor, E.movable(stmt))},
        )

    def _one_block(self, steps: list[Event]) -> bool:
        return self.facts.tree.in_one_block([s.ctx.stmt for s in steps])

    # -- step() with no update() after it
    def _missing_update(self, step: Event, done: set[tuple[str, int]]) -> Violation | None:
        facts = self.facts
        scaler = step.scaler
        iteration = facts.iterations.iteration_of(step)
        if iteration is None:
            return None
        key = (scaler, id(iteration.loop) if iteration.loop is not None else 0)
        if key in done:
            return None
        stepped = {e.scaler for e in iteration.of(K.SCALER_STEP)}
        if any(
            (u.scaler == scaler or u.scaler not in stepped) and facts.control_flow.may_run_together(u.ctx, step.ctx)
            for u in iteration.of(K.UPDATE)
        ):
            return None  # an update in the iteration: a misplaced one is reported at the update
        if not facts.protocol.steps_left_at_pass_end(step, iteration.loop.node if iteration.loop is not None else None):
            return None  # the protocol: no feasible path leaves the pass with this step's optimizer stepped
        if facts.iterations.update_may_follow(step, iteration):
            return None
        steps = [e for e in iteration.of(K.SCALER_STEP) if e.scaler == scaler and facts.control_flow.may_run_together(e.ctx, step.ctx)]
        if step is not steps[-1]:
            return None
        done.add(key)
        where = "in this iteration" if iteration.loop is not None else "in this per-step function"
        message = (
            f"`{scaler}.step({step.optimizer or '...'})` has no `{scaler}.update()` after it {where}: the scale "
            f"never adapts and the next `{scaler}.step(...)` raises `{protocol.STEP_TWICE}`"
        )
        return self.violation(step.call, message, fix=self._add_update_fix(step, steps, iteration))

    def _add_update_fix(self, last: Event, steps: list[Event], iteration: Iteration) -> Fix | NoFix:
        facts = self.facts
        scaler = last.scaler
        anchor = E.anchor_statement(last)
        if anchor is None:
            return NoFix("the step is not a plain statement of its own")
        if not self._one_block(steps):
            return NoFix("the steps sit in different blocks")
        outside = [
            u for u in facts.iterations.events_of(last.ctx.scope, K.UPDATE, scaler)
            if u not in iteration.events and facts.control_flow.reaches(last.ctx, u.ctx)
        ]
        if not outside:
            new = E.parse_statement(f"{scaler}.update()\n")
            return Fix.safe(f"Insert `{scaler}.update()` after the last step", {anchor: E.insert_after(anchor, new)})
        # ``scaler.update()`` once per epoch after the batch loop: move it into the iteration
        # (inserting a second one would make the epoch-level one assert).
        stmt = E.movable_statement(facts, outside[0]) if len(outside) == 1 else None
        if stmt is None:
            return NoFix("an update() after the loop must move into it")
        return Fix.safe(
            f"Move `{scaler}.update()` after the last step of the iteration",
            {stmt: cst.RemovalSentinel.REMOVE, anchor: E.insert_after(anchor, E.movable(stmt))},
        )
