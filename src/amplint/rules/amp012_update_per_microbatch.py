from __future__ import annotations

from typing import Iterator

import libcst as cst

import amplint.scaler_protocol as protocol
import amplint.fix.edits as E
from amplint.amp import Event, EventKind
from amplint.semantic import Branch
from amplint.fix import Fix, NoFix
from amplint.model import FixSafety
from amplint.rules.base import SCALER_TRIGGERS, Invalid, Rule, Violation


class UpdatePerMicrobatch(Rule):
    """
    ## What it does
    Finds gradient accumulation loops where `scaler.step(optimizer)` runs only under the
    accumulation condition (`if (i + 1) % accum_steps == 0:`) but `scaler.update()` runs on
    every micro-batch.

    ## Why is this bad?
    `update()` needs the inf checks that `step` (or `unscale_`) records. On the first micro-batch
    that does not step, `update()` raises `AssertionError: No inf checks were recorded prior to
    update.` The scale must also stay constant while gradients of one effective batch are summed,
    so `update()` belongs with the step, once per effective batch.

    ## Example
    ```python
    import torch

    scaler = torch.amp.GradScaler("cuda")
    for i, (x, y) in enumerate(loader):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_fn(model(x), y) / accum_steps
        scaler.scale(loss).backward()
        if (i + 1) % accum_steps == 0:
            scaler.step(optimizer)
            optimizer.zero_grad()
        scaler.update()
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
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
    ```

    ## Fix safety
    The fix is safe when unambiguous: the `update()` statement is moved right after the last
    `scaler.step(...)` under the accumulation condition (or removed when an `update()` already
    runs after the step there on every path). No fix when the steps sit under different conditions or the statements are not
    plain lines of their own.

    ## References
    - [Automatic Mixed Precision examples: gradient accumulation](https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-accumulation)
    - [torch.amp.GradScaler.update](https://pytorch.org/docs/stable/amp.html#torch.amp.GradScaler.update)
    - [AMP recipe](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    """

    code = "AMP012"
    name = "update-per-microbatch"
    summary = "`scaler.update()` every micro-batch while `scaler.step` runs once per accumulated batch"
    fix_safety = FixSafety.SAFE
    fix_withheld = "when the update or the step is not a plain statement of its own"
    triggers = SCALER_TRIGGERS

    valid = (
        (
            "scaler = torch.amp.GradScaler('cuda')\nfor i, x in enumerate(loader):\n    scaler.scale(model(x)).backward()\n"
            "    if (i + 1) % accum == 0:\n        scaler.step(optimizer)\n        scaler.update()\n"
        ),
        (
            "scaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    scaler.scale(model(x)).backward()\n"
            "    scaler.unscale_(optimizer)\n    if torch.isfinite(norm):\n        scaler.step(optimizer)\n    scaler.update()\n"
        ),
        (
            "scaler = torch.amp.GradScaler('cuda')\nfor i, x in enumerate(loader):\n    scaler.scale(model(x)).backward()\n"
            "    if (i + 1) % accum == 0:\n        scaler.step(optimizer)\n    if (i + 1) % accum == 0:\n        scaler.update()\n"
        ),
    )
    invalid = (
        Invalid(
            (
                "scaler = torch.amp.GradScaler('cuda')\nfor i, x in enumerate(loader):\n    scaler.scale(model(x)).backward()\n"
                "    if (i + 1) % accum == 0:\n        scaler.step(optimizer)\n        optimizer.zero_grad()\n    scaler.update()\n"
            ),
            fixed=(
                "scaler = torch.amp.GradScaler('cuda')\nfor i, x in enumerate(loader):\n    scaler.scale(model(x)).backward()\n"
                "    if (i + 1) % accum == 0:\n        scaler.step(optimizer)\n        scaler.update()\n        optimizer.zero_grad()\n"
            ),
        ),
        Invalid(
            (
                "def train(self):\n    for step, batch in enumerate(self.loader):\n        self.scaler.scale(self.loss(batch)).backward()\n"
                "        if step % self.grad_accum == 0:\n            self.scaler.step(self.opt)\n            self.opt.zero_grad()\n"
                "        self.scaler.update()\n        self.log(step)\n"
            ),
            fixed=(
                "def train(self):\n    for step, batch in enumerate(self.loader):\n        self.scaler.scale(self.loss(batch)).backward()\n"
                "        if step % self.grad_accum == 0:\n            self.scaler.step(self.opt)\n            self.scaler.update()\n"
                "            self.opt.zero_grad()\n        self.log(step)\n"
            ),
        ),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        for events in facts.timeline.events_by_scope.values():
            for event in events:
                if event.kind == EventKind.UPDATE and event.scaler is not None:
                    violation = self._check_update(event, events)
                    if violation is not None:
                        yield violation

    def _check_update(self, update: Event, events: list[Event]) -> Violation | None:
        facts = self.facts
        scaler = update.scaler
        if facts.scaling.scaler_provably_disabled(scaler, update.ctx.scope):
            return None
        loop = facts.training.iteration_loop(update.ctx)
        if loop is None:
            return None
        in_loop = [e for e in events if loop in e.ctx.loops and facts.control_flow.may_run_together(e.ctx, update.ctx)]
        steps = [e for e in in_loop if e.kind == EventKind.SCALER_STEP and e.scaler == scaler]
        if not steps:
            return None
        # The protocol's verdict: some feasible path reaches this update() with no step or unscale_
        # recorded since the last one (an ``unscale_`` outside the condition records inf checks,
        # ``update(new_scale)`` needs none, a micro-batch that ``continue``s never reaches it).
        if not any(found.misuse is protocol.UPDATED_WITHOUT_STEP for found in facts.protocol.misuses_at(update)):
            return None
        branches: list[Branch] = []
        for step in steps:
            acc = facts.training.accumulation_branch(step.ctx)
            if acc is None or not facts.tree.contains(loop.node, acc.node):
                return None
            if facts.tree.under_same_condition(update.ctx, acc):
                return None
            branches.append(acc)
        acc = branches[-1]
        test = facts.code(acc.node.test)  # type: ignore[attr-defined]
        message = (
            f"`{scaler}.update()` runs on every micro-batch but `{scaler}.step({steps[-1].optimizer or '...'})` only "
            f"under `if {test}:`: the first micro-batch without a step raises `{protocol.UPDATE_WITHOUT_STEP}`; "
            f"move it under the same condition, after the step"
        )
        stmt = E.movable_statement(facts, update)
        last = steps[-1]
        anchor = E.anchor_statement(last)
        if stmt is None or anchor is None:
            return self.violation(update.call, message, fix=NoFix("the update or the step is not a plain statement of its own"))
        if any(b.node is not acc.node for b in branches) or not all(
            facts.tree.statement_block(s.ctx.stmt) == facts.tree.statement_block(anchor) for s in steps if s.ctx.stmt is not None
        ):
            return self.violation(update.call, message, fix=NoFix("the steps sit under different conditions"))
        already = [
            e for e in in_loop
            if e.kind == EventKind.UPDATE and e.scaler == scaler and e is not update and facts.tree.under_same_condition(e.ctx, acc)
            and facts.control_flow.on_every_path(last.ctx, e.ctx)
        ]
        if already:
            fix = Fix.safe(f"Remove this `{scaler}.update()` (one runs after the step)", {stmt: cst.RemovalSentinel.REMOVE})
        else:
            fix = Fix.safe(
                f"Move `{scaler}.update()` under `if {test}:`, after the step",
                {stmt: cst.RemovalSentinel.REMOVE, anchor: E.insert_after(anchor, E.movable(stmt))},
            )
        return self.violation(update.call, message, fix=fix)
