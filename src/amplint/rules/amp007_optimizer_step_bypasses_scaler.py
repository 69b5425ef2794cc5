from __future__ import annotations

from typing import Iterator

import libcst as cst

from amplint.amp import Event, EventKind
from amplint.fix import Fix, NoFix
import amplint.scaler_protocol as P
from amplint.model import FixSafety
from amplint.rules.base import Invalid, Rule, Violation


class OptimizerStepBypassesScaler(Rule):
    """
    ## What it does
    Finds `optimizer.step()` called directly on an optimizer whose gradients came from
    `scaler.scale(loss).backward()`.

    ## Why is this bad?
    `scaler.scale(loss)` multiplies the loss by the current scale (65536 at the start), so every
    gradient is 65536 times too large. `scaler.step(optimizer)` divides the gradients by the scale
    and skips the step when they hold inf/NaN; a plain `optimizer.step()` does neither: the weights
    take a step scaled by 65536 and blow up, and overflow steps are applied instead of skipped. A
    following `scaler.update()` then fails with `AssertionError: No inf checks were recorded prior
    to update.` because the scaler never saw a step.

    The rule stays silent when the two paths are exclusive (`if use_amp: scaler.scale(loss).backward()
    ... else: loss.backward(); optimizer.step()`), when the `optimizer.step()` sits in the non-AMP
    branch of an `if scaler is not None:` / `if use_amp:` test, when the scaler is built with
    `enabled=False`, when `scaler.unscale_(optimizer)` ran first, and for `optimizer.step(closure)`.

    ## Example
    ```python
    import torch

    scaler = torch.amp.GradScaler("cuda")
    optimizer = torch.optim.AdamW(model.parameters())
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    import torch

    scaler = torch.amp.GradScaler("cuda")
    optimizer = torch.optim.AdamW(model.parameters())
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Fix safety
    `optimizer.step()` becomes `scaler.step(optimizer)` with the scaler that scaled the backward,
    which unscales the gradients and then calls `optimizer.step()` (or skips it on inf/NaN). If no
    `scaler.update()` follows, AMP009 reports that next and inserts it. The fix is safe when every
    path to the step runs the scaled backward. When another path reaches it with gradients the
    scaler did not scale (`if use_amp: scaler.scale(loss).backward()` / `else: loss.backward()`
    before a shared `optimizer.step()`), the fix is unsafe: on that path `scaler.step(optimizer)`
    raises `AttributeError` where the scaler is `None`, and with an enabled scaler that never
    scaled anything `AssertionError: Attempted step but _scale is None.` (or it divides true
    gradients by the scale); it is right there only when the scaler is disabled exactly when that
    path runs (`GradScaler(enabled=use_amp)`). Branch the step as the backward is branched. No fix
    is offered when backwards through different scalers reach the step.

    ## References
    - [Automatic Mixed Precision examples: typical mixed precision training](https://pytorch.org/docs/stable/notes/amp_examples.html#typical-mixed-precision-training)
    - [torch.amp.GradScaler](https://pytorch.org/docs/stable/amp.html#gradient-scaling)
    - [AMP recipe](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    """

    code = "AMP007"
    name = "optimizer-step-bypasses-scaler"
    summary = "`optimizer.step()` on gradients scaled by `scaler.scale(loss).backward()`"
    fix_safety = FixSafety.SOMETIMES
    fix_withheld = "when backwards through different scalers reach the step"
    # Literal substrings for the prefilter: a bypassed scaler means a scaled backward in the file.
    triggers = (".scale(",)

    valid = (
        "scaler = torch.amp.GradScaler('cuda')\nscaler.scale(loss).backward()\nscaler.step(optimizer)\nscaler.update()\n",
        (
            "scaler = torch.amp.GradScaler('cuda')\n"
            "if use_amp:\n    scaler.scale(loss).backward()\n    scaler.step(optimizer)\n    scaler.update()\n"
            "else:\n    loss.backward()\n    optimizer.step()\n"
        ),
        "import torch\nscaler = torch.amp.GradScaler('cuda', enabled=False)\nscaler.scale(loss).backward()\noptimizer.step()\n",
        "scaler = torch.amp.GradScaler('cuda')\nscaler.scale(loss).backward()\noptimizer.step(closure)\n",
        (
            "scaler = torch.amp.GradScaler('cuda', enabled=use_amp)\nscaler.scale(loss).backward()\n"
            "if use_amp:\n    scaler.step(optimizer)\n    scaler.update()\nelse:\n    optimizer.step()\n"
        ),
    )
    invalid = (
        Invalid(
            "scaler = torch.amp.GradScaler('cuda')\nscaler.scale(loss).backward()\noptimizer.step()\n",
            fixed="scaler = torch.amp.GradScaler('cuda')\nscaler.scale(loss).backward()\nscaler.step(optimizer)\n",
        ),
        Invalid(
            (
                "def train_step(self, batch):\n    loss = self.model(batch)\n"
                "    self.scaler.scale(loss).backward()\n    self.optimizer.step()\n    self.scaler.update()\n"
            ),
            fixed=(
                "def train_step(self, batch):\n    loss = self.model(batch)\n"
                "    self.scaler.scale(loss).backward()\n    self.scaler.step(self.optimizer)\n    self.scaler.update()\n"
            ),
        ),
        Invalid(
            (
                "scaler = torch.amp.GradScaler('cuda')\nif use_amp:\n    scaler.scale(loss).backward()\n"
                "else:\n    loss.backward()\noptimizer.step()\n"
            ),
            fixed=(
                "scaler = torch.amp.GradScaler('cuda')\nif use_amp:\n    scaler.scale(loss).backward()\n"
                "else:\n    loss.backward()\nscaler.step(optimizer)\n"
            ),
            unsafe=True,  # without AMP the plain backward reaches the step: scaler.step would assert there
        ),
        # Two scalers' backwards reach one step: which scaler should step it is not for the fix to choose.
        (
            "scaler_a = torch.amp.GradScaler('cuda')\nscaler_b = torch.amp.GradScaler('cuda')\n"
            "if phase:\n    scaler_a.scale(loss).backward()\nelse:\n    scaler_b.scale(loss).backward()\noptimizer.step()\n"
        ),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        for event in facts.timeline.events:
            if event.kind != EventKind.OPTIMIZER_STEP or event.call.args:
                continue  # ``optimizer.step(closure)``: LBFGS-style, the closure owns the backward
            backwards = self._scaled_backwards(event)
            if not backwards:
                continue
            if facts.training.amp_gate(event.ctx, backwards[0].ctx) is not None:
                continue  # the non-AMP path of an ``if use_amp`` / ``if scaler is not None`` test
            scalers = sorted({facts.scaling.backward_scaler(b) or "" for b in backwards})
            line = facts.position(backwards[0].call).start.line
            optimizer = event.optimizer or facts.code(event.call.func.value)  # type: ignore[attr-defined]
            scaler = scalers[0] if len(scalers) == 1 else None
            message = (
                f"`{optimizer}.step()` runs on gradients scaled by `{scalers[0]}.scale(...)` (line {line}): "
                f"the step is ~65536x too large and inf/NaN steps are not skipped; "
                f"use `{scalers[0]}.step({optimizer})`"
            )
            if scaler is None:
                yield self.violation(event.call, message, fix=NoFix("backwards through several scalers reach this step"))
                continue
            func = event.call.func
            assert isinstance(func, cst.Attribute)
            replacement = cst.Call(
                func=cst.Attribute(value=cst.parse_expression(scaler), attr=cst.Name("step")),
                args=[cst.Arg(value=func.value)],
            )
            fix = Fix.safe(f"Replace with `{scaler}.step({optimizer})`", {event.call: replacement})
            if self._unscaled_path_reaches(event, scaler):
                # ``else: loss.backward()`` (or ``self.scaler`` None) reaches the step too: there the
                # original plain step is right and ``scaler.step`` raises or divides true gradients.
                fix = Fix.unsafe(fix.message, fix.changes)
            yield self.violation(event.call, message, fix=fix)

    def _unscaled_path_reaches(self, step: Event, scaler: str) -> bool:
        """On some feasible path the step's optimizer holds gradients the scaler did not scale
        (a plain backward, or none) when the step runs."""
        optimizer = step.optimizer or self.facts.code(step.call.func.value)  # type: ignore[attr-defined]
        for run, state in self.facts.protocol.states_before(step):
            tracked = state.get(optimizer)
            if scaler in run.names and tracked is not None and tracked.grads in (P.Grads.TRUE, P.Grads.NONE):
                return True
        return False

    def _scaled_backwards(self, step: Event) -> list[Event]:
        """The scaled backwards whose gradients this ``optimizer.step()`` consumes, on a path the
        GradScaler protocol says steps them still scaled, nearest first. A scaler built with
        ``enabled=False`` scales nothing."""
        facts = self.facts
        found: list[Event] = []
        for misuse in facts.protocol.misuses_at(step):
            backward = misuse.before.grads_by
            if misuse.misuse.code != self.code or backward is None or backward in found:
                continue
            if facts.scaling.scaler_provably_disabled(facts.scaling.backward_scaler(backward), backward.ctx.scope):
                return []
            found.append(backward)
        return facts.in_walk_order(found)[::-1]
