from __future__ import annotations

from textwrap import dedent
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterator

import libcst as cst

import amplint.scaler_protocol as protocol
from amplint.amp import Event, EventKind
from amplint.fix import Fix, NoFix
from amplint.model import FixSafety
from amplint.rules.base import SCALER_TRIGGERS, Invalid, Rule, Violation
import amplint.semantic.syntax as S


@dataclass
class _Callers:
    """What the callers of a backward helper pass for its loss parameter."""

    name: str
    public: bool  # importable from other modules, whose callers this file cannot see
    scaled: list = field(default_factory=list)
    unscaled: list = field(default_factory=list)
    unknown: list = field(default_factory=list)


def _as_unsafe(fix: Fix | None) -> Fix | None:
    return Fix.unsafe(fix.message, fix.changes, fix.group) if fix is not None else None


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
    The fix is safe for a loss the function computes itself (for one it is handed, see below):
    `loss.backward(...)` becomes `scaler.scale(loss).backward(...)` with the scaler that steps the
    optimizer, keeping the backward's arguments. When that scaler may be `None` (`self.scaler =
    None` unless AMP is on, `GradScaler() if amp else None`), the backward becomes
    `(scaler.scale(loss) if scaler is not None else loss).backward(...)`, so the path without AMP
    runs as before. A discarded `scaler.scale(loss)` directly followed by `loss.backward()` is merged
    into `scaler.scale(loss).backward()`. A discarded `scaler.scale(...)` elsewhere is reported
    without a fix.

    When the loss is a parameter of the function (`def _backward(self, loss)`), its callers
    decide: if every caller in the file passes `scaler.scale(loss)` the function is right and
    nothing is reported; if they disagree, the callers that pass an unscaled loss are reported,
    without a fix; if nobody in the file calls it, nothing is reported (its callers elsewhere may
    scale). When every caller in the file passes an unscaled loss the backward is reported, and
    its fix is safe only for a private function (`_name`, or one nested in another): a public one
    may have callers in other modules that scale, so there the fix is unsafe. So is the fix of a
    loss computed from a parameter (`(loss / self.accum).backward()` in `def _backward(self,
    loss)`): a caller may pass `scaler.scale(loss)`, which the rewrite would scale twice.

    ## References
    - [Automatic Mixed Precision examples: typical mixed precision training](https://pytorch.org/docs/stable/notes/amp_examples.html#typical-mixed-precision-training)
    - [torch.amp.GradScaler.scale](https://pytorch.org/docs/stable/amp.html#torch.amp.GradScaler.scale)
    - [AMP recipe](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    """

    code = "AMP008"
    name = "unscaled-backward"
    summary = "Backward on an unscaled loss while `scaler.step` unscales the gradients"
    fix_safety = FixSafety.SOMETIMES
    fix_withheld = (
        "for a discarded `scaler.scale(...)` not directly followed by a `.backward()` on it, and at a caller "
        "that passes an unscaled loss to a helper the other callers give a scaled one"
    )
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
            unsafe=True,  # the loss is computed from a parameter: a caller elsewhere may pass it scaled
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
                    yield from self._unscaled_backward(event)

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
    def _dividing_step(self, backward: Event) -> Event | None:
        """The scaler ``step`` (or ``unscale_``) that divides this backward's gradients by the
        scale on some feasible path, as the GradScaler protocol runs."""
        for found in self._never_scaled.get(backward, ()):
            return found.event
        return None

    def _loss_from_callers(self, backward: Event) -> "_Callers | None":
        """When the backward's tensor is a parameter of its function (``def _backward(self, loss)``),
        what the same-file callers pass for it; ``None`` when it is not a parameter."""
        facts = self.facts
        receiver = backward.receiver
        function = facts.callgraph.function_of(backward.ctx.scope)
        if function is None or receiver is None or receiver not in function.params:
            return None
        if any(facts.control_flow.reaches(a.ctx, backward.ctx) for a in facts.assignments_to(receiver, backward.ctx.scope)
               if a.ctx.scope is backward.ctx.scope):
            return None  # reassigned on the way: the function computes it
        name = function.node.name.value
        out = _Callers(name, public=not name.startswith("_") and function.ctx.scope.kind != "function")
        sites = facts.callgraph.callers_of(function)
        if not sites:
            out.unknown.append(None)  # nobody here calls it: whoever does may scale the loss
        for site in sites:
            argument = facts.callgraph.argument_for(site, function, receiver)
            verdict = self._scaled_argument(argument, site)
            if verdict is False and facts.training.amp_gate(site.ctx) is not None:
                continue  # the FP32 arm of ``if scaler is not None:`` / ``if use_amp:``: it steps without the scaler
            (out.scaled if verdict is True else out.unscaled if verdict is False else out.unknown).append(site)
        return out

    def _loss_from_parameter(self, backward: Event) -> str | None:
        """The parameter the backward's loss is computed from when it is not the parameter itself
        (``(loss / self.accum).backward()`` in ``def _backward(self, loss)``, ``sum(losses)``, or
        ``total = loss * w`` first): the expression's leading name, or a parameter named like a
        loss that is not called (``loss_fn(x)``). A ``model`` or ``accum_steps`` parameter that
        computes or divides the loss (``(model(x) / accum_steps).backward()``) is not its source."""
        facts, func = self.facts, backward.call.func
        function = facts.callgraph.function_of(backward.ctx.scope)
        if function is None or not isinstance(func, cst.Attribute):
            return None
        params = set(function.params) - {"self", "cls"}
        assigned = facts.assignments_to(backward.receiver, backward.ctx.scope) if backward.receiver else []
        for source in [func.value, *(a.value for a in assigned if a.ctx.scope is backward.ctx.scope and a.value is not None)]:
            if S.leading_name(source) in params:
                return S.leading_name(source)
            for ref in facts.references_within(source):
                if ref.parts[0] in params and "loss" in ref.parts[0].lower() and (ref.role != "call" or len(ref.parts) > 1):
                    return ref.parts[0]
        return None

    def _scaled_argument(self, argument, site) -> bool | None:
        """``scaler.scale(loss)`` (or a name only ever assigned one) is scaled, a plain tensor is not;
        ``None`` when it cannot be told."""
        facts = self.facts
        if argument is None:
            return None
        scales = [e for e in facts.timeline.events_by_scope.get(site.ctx.scope, []) if e.kind is EventKind.SCALE]
        if any(facts.tree.contains(argument, e.call) for e in scales):
            return True
        text = S.dotted(argument)
        if text is None:
            return False if isinstance(argument, (cst.Call, cst.BinaryOperation, cst.Subscript)) and "scale" not in facts.code(argument).lower() else None
        assigned = [a for a in facts.assignments_to(text, site.ctx.scope) if a.ctx.scope is site.ctx.scope and a.value is not None]
        if not assigned:
            return None
        scaled = [any(facts.tree.contains(a.value, e.call) for e in scales) for a in assigned]
        return True if all(scaled) else False if not any(scaled) and "scale" not in text.lower() else None

    @cached_property
    def _never_scaled(self) -> dict[Event, list]:
        out: dict[Event, list] = {}
        for event in self.facts.timeline.events:
            if event.kind in (EventKind.SCALER_STEP, EventKind.UNSCALE):
                for found in self.facts.protocol.misuses_at(event):
                    if found.misuse is protocol.NEVER_SCALED and found.before.grads_by is not None:
                        out.setdefault(found.before.grads_by, []).append(found)
        return out

    def _unscaled_backward(self, event: Event) -> Iterator[Violation]:
        violation = self._checked_backward(event)
        if violation is None:
            return
        callers = self._loss_from_callers(event)
        if callers is None:
            if self._loss_from_parameter(event) is not None:
                # ``(loss / self.accum).backward()`` in ``def _backward(self, loss)``: a caller may hand
                # in ``scaler.scale(loss)``, and the rewrite would then scale it twice
                violation.fix = _as_unsafe(violation.fix)
            yield violation
        elif callers.unscaled and not callers.scaled and not callers.unknown:
            if callers.public:
                # callers in other modules may hand in a scaled loss: rewriting the helper would scale theirs twice
                violation.fix = _as_unsafe(violation.fix)
            yield violation
        elif callers.unscaled and callers.scaled and not callers.unknown:
            for site in callers.unscaled:  # the helper is right for the callers that scale: report the others
                yield self.violation(site.node, (
                    f"`{self.facts.code(site.node.func)}(...)` passes an unscaled loss, but the other callers of "
                    f"`{callers.name}` pass `scaler.scale(loss)` and it steps through the scaler: this call's update is "
                    "~65536x too small; pass the scaled loss here too"
                ), fix=NoFix("scale the loss this caller passes, as the other callers do"))

    def _checked_backward(self, event: Event) -> Violation | None:
        facts = self.facts
        call = event.call
        if S.positional_args(call) or S.has_star_args(call):
            return None  # ``accelerator.backward(loss)`` / ``x.backward(grad)``: a wrapper or a vector-Jacobian product
        func = call.func
        if not isinstance(func, cst.Attribute):
            return None
        receiver_text = facts.code(func.value)
        if "scale" in receiver_text.lower():
            return None  # ``scaled_loss.backward()``, ``self.scale_loss(loss).backward()``
        step = self._dividing_step(event)
        if step is None or step.scaler is None or facts.scaling.is_disabled_scaler(step.scaler):
            return None
        if facts.training.amp_gate(event.ctx, step.ctx) is not None:
            return None  # the non-AMP path: ``if use_amp: ... else: loss.backward()``
        if facts.scaling.discarded_scale_before(event):
            return None  # reported once, at the discarded ``scaler.scale(loss)``
        scaler = step.scaler
        loss = S.without_parens(func.value)
        method = "unscale_" if step.kind is EventKind.UNSCALE else "step"
        step_text = f"{scaler}.{method}({step.optimizer or '...'})"
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
