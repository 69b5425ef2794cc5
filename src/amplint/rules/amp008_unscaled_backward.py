from __future__ import annotations

from typing import Iterator

import libcst as cst

from amplint.fix import edits as E
from amplint.semantic import syntax as S
from amplint.amp import BACKWARD_KINDS, Event, EventKind
from amplint.fix import Fix, NoFix
from amplint.model import FixSafety
from amplint.rules.base import SCALER_TRIGGERS, Invalid, Rule, Violation


def _bare(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``expr`` without its own parentheses (it becomes a call argument)."""
    if getattr(expr, "lpar", None):
        return expr.with_changes(lpar=[], rpar=[])
    return expr


class UnscaledBackward(Rule):
    """
    ## What it does
    Finds `loss.backward()` on an unscaled loss when an enabled `GradScaler` then steps the
    optimizer with `scaler.step(optimizer)`, and `scaler.scale(loss)` whose result is thrown away.

    ## Why is this bad?
    `scaler.step(optimizer)` divides every gradient by the current scale (65536 at the start)
    before stepping. If the backward did not run on `scaler.scale(loss)`, the gradients were never
    multiplied: the optimizer sees them 65536 times too small and the loss barely moves, while
    fp16 gradients that underflow are lost. With a scaler that never scaled anything, the first
    `scaler.step` raises `AssertionError: Attempted step but _scale is None.` instead.
    `scaler.scale(loss)` returns a new tensor and leaves `loss` alone, so a bare
    `scaler.scale(loss)` statement does nothing (except set the scaler up, so the tiny updates go
    unnoticed).

    The rule stays silent for `loss.backward()` in the non-AMP branch of `if use_amp:` /
    `if scaler is not None:`, for a scaler built with `enabled=False`, for
    `scaled = scaler.scale(loss); scaled.backward()`, and for wrappers such as
    `accelerator.backward(loss)`.

    ## Example
    ```python
    import torch

    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_fn(model(x), y)
        loss.backward()
        scaler.step(optimizer)
        scaler.update()
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
    The fix is safe: `loss.backward(...)` becomes `scaler.scale(loss).backward(...)` with the
    scaler that steps the optimizer, keeping the backward's arguments; a discarded
    `scaler.scale(loss)` directly followed by `loss.backward()` is merged into
    `scaler.scale(loss).backward()`. A discarded `scaler.scale(...)` elsewhere is reported without
    a fix.

    ## References
    - [Automatic Mixed Precision examples: typical mixed precision training](https://pytorch.org/docs/stable/notes/amp_examples.html#typical-mixed-precision-training)
    - [torch.amp.GradScaler.scale](https://pytorch.org/docs/stable/amp.html#torch.amp.GradScaler.scale)
    - [AMP recipe](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    """

    code = "AMP008"
    name = "unscaled-backward"
    summary = "Backward on an unscaled loss while `scaler.step` unscales the gradients"
    fix_safety = FixSafety.SAFE
    triggers = SCALER_TRIGGERS

    valid = (
        "scaler = torch.amp.GradScaler('cuda')\nscaler.scale(loss).backward()\nscaler.step(optimizer)\nscaler.update()\n",
        (
            "scaler = torch.amp.GradScaler('cuda')\nif use_amp:\n    scaler.scale(loss).backward()\n"
            "    scaler.step(optimizer)\n    scaler.update()\nelse:\n    loss.backward()\n    optimizer.step()\n"
        ),
        "import torch\nscaler = torch.amp.GradScaler('cuda', enabled=False)\nloss.backward()\nscaler.step(optimizer)\nscaler.update()\n",
        "scaler = torch.amp.GradScaler('cuda')\nscaled = scaler.scale(loss)\nscaled.backward()\nscaler.step(optimizer)\nscaler.update()\n",
        "scaler = torch.amp.GradScaler('cuda')\naccelerator.backward(loss)\nscaler.step(optimizer)\nscaler.update()\n",
    )
    invalid = (
        Invalid(
            "scaler = torch.amp.GradScaler('cuda')\nloss.backward()\nscaler.step(optimizer)\nscaler.update()\n",
            fixed="scaler = torch.amp.GradScaler('cuda')\nscaler.scale(loss).backward()\nscaler.step(optimizer)\nscaler.update()\n",
        ),
        Invalid(
            "scaler = torch.amp.GradScaler('cuda')\nscaler.scale(loss)\nloss.backward()\nscaler.step(optimizer)\nscaler.update()\n",
            fixed="scaler = torch.amp.GradScaler('cuda')\nscaler.scale(loss).backward()\nscaler.step(optimizer)\nscaler.update()\n",
        ),
        Invalid(
            (
                "def train_step(self, loss):\n    (loss / self.accum).backward(retain_graph=True)\n"
                "    self.scaler.step(self.opt)\n    self.scaler.update()\n"
            ),
            fixed=(
                "def train_step(self, loss):\n    self.scaler.scale(loss / self.accum).backward(retain_graph=True)\n"
                "    self.scaler.step(self.opt)\n    self.scaler.update()\n"
            ),
        ),
        Invalid("scaler = torch.amp.GradScaler('cuda')\nscaler.scale(loss)\nscaler.step(optimizer)\n"),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        for events in facts.events_by_scope.values():
            merged: set[int] = set()  # backwards folded into a discarded-scale finding
            for event in events:
                if event.kind == EventKind.SCALE and event.site.is_expression_statement:
                    yield self._discarded_scale(event, events, merged)
            for event in events:
                if event.kind == EventKind.BACKWARD and id(event) not in merged:
                    violation = self._unscaled_backward(event, events)
                    if violation is not None:
                        yield violation

    # -- ``scaler.scale(loss)`` as a statement
    def _discarded_scale(self, event: Event, events: list[Event], merged: set[int]) -> Violation:
        facts = self.facts
        call = event.call
        args = S.positional_args(call)
        message = (
            f"`{facts.code(call)}` discards its result: `scale` returns a new tensor and leaves the loss "
            f"unscaled; call `.backward()` on it"
        )
        stmt = event.ctx.stmt
        nxt = self._next_statement(stmt)
        backward = None
        if nxt is not None and len(args) == 1 and not call.args[0].keyword:
            target = facts.code(_bare(args[0].value)).strip()
            for other in events:
                if (
                    other.kind == EventKind.BACKWARD
                    and other.ctx.stmt is nxt
                    and other.site.is_expression_statement
                    and isinstance(other.call.func, cst.Attribute)
                    and facts.code(_bare(other.call.func.value)).strip() == target
                ):
                    backward = other
        if backward is None:
            return self.violation(call, message, fix=NoFix("no `.backward()` on the same tensor follows directly"))
        merged.add(id(backward))
        func = backward.call.func
        assert isinstance(func, cst.Attribute)
        new_call = backward.call.with_changes(func=func.with_changes(value=call))
        fix = Fix.safe(
            f"Merge into `{facts.code(call)}.backward()`",
            {stmt: cst.RemovalSentinel.REMOVE, backward.call: new_call},  # type: ignore[dict-item]
        )
        return self.violation(call, message, fix=fix)

    def _next_statement(self, stmt: cst.CSTNode | None) -> cst.CSTNode | None:
        if not E.single_simple_statement(stmt):
            return None
        found = self.facts.statement_block(stmt)  # type: ignore[arg-type]
        if found is None:
            return None
        _, body = found
        for index, item in enumerate(body):
            if item is stmt:
                return body[index + 1] if index + 1 < len(body) else None
        return None

    # -- ``loss.backward()`` followed by ``scaler.step(optimizer)``
    def _unscaled_backward(self, event: Event, events: list[Event]) -> Violation | None:
        facts = self.facts
        call = event.call
        if S.positional_args(call) or S.has_star_args(call):
            return None  # ``accelerator.backward(loss)`` / ``x.backward(grad)``: a wrapper or a vector-Jacobian product
        if facts.backward_scaler(event) is not None:
            return None
        func = call.func
        if not isinstance(func, cst.Attribute):
            return None
        receiver_text = facts.code(func.value)
        if "scale" in receiver_text.lower():
            return None  # ``scaled_loss.backward()``, ``self.scale_loss(loss).backward()``
        step = self._next_scaler_step(event, events)
        if step is None or step.scaler is None:
            return None
        info = facts.scalers.get(step.scaler)
        if info is not None and info.provably_disabled:
            return None
        if facts.amp_gate(event.ctx, step.ctx) is not None:
            return None  # the non-AMP path: ``if use_amp: ... else: loss.backward()``
        if self._discarded_scale_before(event, events):
            return None  # reported once, at the discarded ``scaler.scale(loss)``
        scaler = step.scaler
        step_text = f"{scaler}.step({step.optimizer or '...'})"
        message = (
            f"`{receiver_text}.backward()` runs on an unscaled loss but `{step_text}` (line "
            f"{facts.position(step.call).start.line}) divides the gradients by the scale: the update is "
            f"~65536x too small; use `{scaler}.scale({facts.code(_bare(func.value))}).backward()`"
        )
        scale_call = cst.Call(
            func=cst.Attribute(value=cst.parse_expression(scaler), attr=cst.Name("scale")),
            args=[cst.Arg(value=_bare(func.value))],
        )
        fix = Fix.safe(
            f"Replace with `{scaler}.scale(...).backward()`", {call: call.with_changes(func=func.with_changes(value=scale_call))}
        )
        return self.violation(call, message, fix=fix)

    def _next_scaler_step(self, backward: Event, events: list[Event]) -> Event | None:
        """The first ``scaler.step`` after ``backward`` on its path, unless something else consumes
        or clears the gradients first."""
        facts = self.facts
        for event in events:
            if event.order <= backward.order or not facts.on_path(event.ctx, backward.ctx):
                continue
            if event.kind == EventKind.SCALER_STEP:
                return event
            if event.kind in BACKWARD_KINDS or event.kind in (EventKind.OPTIMIZER_STEP, EventKind.UPDATE, EventKind.ZERO_GRAD):
                return None
        return None

    def _discarded_scale_before(self, backward: Event, events: list[Event]) -> bool:
        facts = self.facts
        func = backward.call.func
        assert isinstance(func, cst.Attribute)
        target = facts.code(_bare(func.value)).strip()
        for event in events:
            if event.order >= backward.order:
                break
            if event.kind == EventKind.SCALE and event.site.is_expression_statement and facts.on_path(event.ctx, backward.ctx):
                args = S.positional_args(event.call)
                if args and facts.code(_bare(args[0].value)).strip() == target:
                    return True
        return False
