from __future__ import annotations

from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.amp import Event, EventKind
from amplint.fix import Fix, NoFix
from amplint.model import FixSafety
from amplint.rules.base import SCALER_TRIGGERS, Invalid, Rule, Violation
import amplint.semantic.syntax as S


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
    scaler that steps the optimizer, keeping the backward's arguments. When that scaler may be
    `None` (`self.scaler = None` unless AMP is on, `GradScaler() if amp else None`), the backward
    becomes `(scaler.scale(loss) if scaler is not None else loss).backward(...)`, so the path
    without AMP runs as before. A discarded
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
    fix_withheld = "for a discarded `scaler.scale(...)` not directly followed by a `.backward()` on it"
    triggers = SCALER_TRIGGERS

    valid = (
        dedent("""\
            scaler = torch.amp.GradScaler('cuda')
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        """),
        dedent("""\
            scaler = torch.amp.GradScaler('cuda')
            if use_amp:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()
        """),
        dedent("""\
            import torch
            scaler = torch.amp.GradScaler('cuda', enabled=False)
            loss.backward()
            scaler.step(optimizer)
            scaler.update()
        """),
        dedent("""\
            scaler = torch.amp.GradScaler('cuda')
            scaled = scaler.scale(loss)
            scaled.backward()
            scaler.step(optimizer)
            scaler.update()
        """),
        dedent("""\
            scaler = torch.amp.GradScaler('cuda')
            accelerator.backward(loss)
            scaler.step(optimizer)
            scaler.update()
        """),
    )
    invalid = (
        Invalid(
            dedent("""\
                scaler = torch.amp.GradScaler('cuda')
                loss.backward()
                scaler.step(optimizer)
                scaler.update()
            """),
            fixed=dedent("""\
                scaler = torch.amp.GradScaler('cuda')
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            """),
        ),
        Invalid(
            dedent("""\
                scaler = torch.amp.GradScaler('cuda')
                scaler.scale(loss)
                loss.backward()
                scaler.step(optimizer)
                scaler.update()
            """),
            fixed=dedent("""\
                scaler = torch.amp.GradScaler('cuda')
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            """),
        ),
        Invalid(
            dedent("""\
                def train_step(self, loss):
                    (loss / self.accum).backward(retain_graph=True)
                    self.scaler.step(self.opt)
                    self.scaler.update()
            """),
            fixed=dedent("""\
                def train_step(self, loss):
                    self.scaler.scale(loss / self.accum).backward(retain_graph=True)
                    self.scaler.step(self.opt)
                    self.scaler.update()
            """),
        ),
        Invalid(
            dedent("""\
                scaler = torch.amp.GradScaler('cuda')
                scaler.scale(loss)
                scaler.step(optimizer)
            """),
        ),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        for events in facts.timeline.events_by_scope.values():
            discarded = [e for e in events if e.kind is EventKind.SCALE and e.site.is_expression_statement]
            merged = {facts.scaling.backward_after_discarded_scale(scale) for scale in discarded}
            for scale in discarded:
                yield self._discarded_scale(scale)
            for event in events:
                if event.kind is EventKind.BACKWARD and event not in merged:
                    violation = self._unscaled_backward(event)
                    if violation is not None:
                        yield violation

    # -- ``scaler.scale(loss)`` as a statement
    def _discarded_scale(self, scale: Event) -> Violation:
        facts = self.facts
        call = scale.call
        message = (
            f"`{facts.code(call)}` discards its result: `scale` returns a new tensor and leaves the loss "
            f"unscaled; call `.backward()` on it"
        )
        backward = facts.scaling.backward_after_discarded_scale(scale)
        if backward is None:
            return self.violation(call, message, fix=NoFix("no `.backward()` on the same tensor follows directly"))
        func = backward.call.func
        assert isinstance(func, cst.Attribute)
        new_call = backward.call.with_changes(func=func.with_changes(value=call))
        fix = Fix.safe(
            f"Merge into `{facts.code(call)}.backward()`",
            {scale.ctx.stmt: cst.RemovalSentinel.REMOVE, backward.call: new_call},  # type: ignore[dict-item]
        )
        return self.violation(call, message, fix=fix)

    # -- ``loss.backward()`` followed by ``scaler.step(optimizer)``
    def _unscaled_backward(self, event: Event) -> Violation | None:
        facts = self.facts
        call = event.call
        if S.positional_args(call) or S.has_star_args(call):
            return None  # ``accelerator.backward(loss)`` / ``x.backward(grad)``: a wrapper or a vector-Jacobian product
        if facts.scaling.backward_scaler(event) is not None:
            return None
        func = call.func
        if not isinstance(func, cst.Attribute):
            return None
        receiver_text = facts.code(func.value)
        if "scale" in receiver_text.lower():
            return None  # ``scaled_loss.backward()``, ``self.scale_loss(loss).backward()``
        step = facts.scaling.next_scaler_step(event)
        if step is None or step.scaler is None or facts.scaling.is_disabled_scaler(step.scaler):
            return None
        if facts.training.amp_gate(event.ctx, step.ctx) is not None:
            return None  # the non-AMP path: ``if use_amp: ... else: loss.backward()``
        if facts.scaling.discarded_scale_before(event):
            return None  # reported once, at the discarded ``scaler.scale(loss)``
        scaler = step.scaler
        loss = S.without_parens(func.value)
        step_text = f"{scaler}.step({step.optimizer or '...'})"
        message = (
            f"`{receiver_text}.backward()` runs on an unscaled loss but `{step_text}` (line "
            f"{facts.position(step.call).start.line}) divides the gradients by the scale: the update is "
            f"~65536x too small; use `{scaler}.scale({facts.code(loss)}).backward()`"
        )
        scale_call = cst.Call(
            func=cst.Attribute(value=cst.parse_expression(scaler), attr=cst.Name("scale")),
            args=[cst.Arg(value=loss)],
        )
        if facts.checkpoints.scaler_may_be_none(scaler, event.ctx):
            # ``self.scaler = None`` unless AMP is on: ``self.scaler.scale(loss)`` would raise
            # ``AttributeError`` on the FP32 path, so that path keeps the loss as it was.
            guarded = cst.IfExp(
                test=cst.Comparison(
                    left=cst.parse_expression(scaler),
                    comparisons=[cst.ComparisonTarget(operator=cst.IsNot(), comparator=cst.Name("None"))],
                ),
                body=scale_call,
                orelse=loss,
                lpar=[cst.LeftParen()],
                rpar=[cst.RightParen()],
            )
            fix = Fix.safe(
                f"Replace with `({scaler}.scale(...) if {scaler} is not None else ...).backward()`",
                {call: call.with_changes(func=func.with_changes(value=guarded))},
            )
            return self.violation(call, message, fix=fix)
        fix = Fix.safe(
            f"Replace with `{scaler}.scale(...).backward()`", {call: call.with_changes(func=func.with_changes(value=scale_call))}
        )
        return self.violation(call, message, fix=fix)
