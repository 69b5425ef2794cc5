from __future__ import annotations

from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.amp import STEP_KINDS, EventKind
import amplint.fix.edits as E
from amplint.semantic import CallSite
from amplint.semantic.handlers import leaves_block
import amplint.semantic.syntax as S
from amplint.fix import Fix, NoFix
from amplint.model import FixSafety
from amplint.rules.base import SCALER_TRIGGERS, Invalid, Rule, Violation

_CLIP_NORM = frozenset({"torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_norm"})


class ClipErrorIfNonfiniteWithScaler(Rule):
    """
    ## What it does
    Finds `torch.nn.utils.clip_grad_norm_(..., error_if_nonfinite=True)` in a step that uses a
    GradScaler: between a `scaler.scale(loss).backward()` and `scaler.step(optimizer)` in the same
    function, or in a same-file helper called there.

    ## Why is this bad?
    With float16 and a GradScaler, inf/NaN gradients are part of normal operation: the scaler starts
    at a scale of 65536, and every step that overflows is detected and skipped by `scaler.step`,
    which then backs the scale off. `error_if_nonfinite=True` turns each of those expected overflow
    steps into a `RuntimeError` from the clip, so training crashes, typically in the first few steps,
    instead of skipping the step.

    ## Example
    ```python
    import torch

    def train_step(model, optimizer, scaler, x, y):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Use instead
    ```python
    import torch

    def train_step(model, optimizer, scaler, x, y):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Fix safety
    The fix drops `error_if_nonfinite=True`, which restores the default (`False`), under which the
    scaler skips non-finite steps as designed. It is safe when the scaler is always there and
    enabled. For a scaler built with a flag (`GradScaler(enabled=args.amp)`) or one that may be
    `None`, the fix is unsafe: with AMP off nothing skips a non-finite step, and the keyword is what
    stops the run; without it the optimizer steps on NaN gradients. A positional `True` is dropped
    only when it is the last argument. Scalers built with a literal `enabled=False` are not reported, nor is a clip
    inside a `try` whose handler catches the `RuntimeError`, skips the step and still calls
    `scaler.update()` (in the handler, in `finally`, or after the `try`): that code already turns the
    overflow into a skipped step, and dropping the keyword would change what it does.

    ## References
    - [Gradient clipping with GradScaler](https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping)
    - [Gradient scaling](https://pytorch.org/docs/stable/amp.html#gradient-scaling)
    """

    code = "AMP017"
    name = "clip-error-if-nonfinite-with-scaler"
    summary = "`clip_grad_norm_(error_if_nonfinite=True)` raises on the overflow steps a GradScaler skips"
    fix_safety = FixSafety.SOMETIMES
    fix_withheld = "for a positional `True` followed by other arguments"
    # Literal substrings for the prefilter: the clip only matters next to a scaler
    # (the flag may be positional, so its name need not appear).
    triggers = SCALER_TRIGGERS

    valid = (
        dedent("""\
            import torch
            def step(model, opt, loss):
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
                opt.step()
        """),
        dedent("""\
            import torch
            def step(model, opt, scaler, loss):
                scaler.scale(loss).backward()
                scaler.unscale_(opt)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=False)
                scaler.step(opt)
                scaler.update()
        """),
        dedent("""\
            import torch
            scaler = torch.amp.GradScaler('cuda', enabled=False)
            def step(model, opt, loss):
                scaler.scale(loss).backward()
                scaler.unscale_(opt)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
                scaler.step(opt)
                scaler.update()
        """),
        dedent("""\
            import torch
            def step(model, opt, scaler, loss):
                scaler.scale(loss).backward()
                scaler.unscale_(opt)
                try:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
                    scaler.step(opt)
                except RuntimeError:
                    opt.zero_grad()
                scaler.update()
        """),
    )
    invalid = (
        Invalid(
            dedent("""\
                import torch
                def step(model, opt, scaler, loss):
                    scaler.scale(loss).backward()
                    scaler.unscale_(opt)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
                    scaler.step(opt)
                    scaler.update()
            """),
            fixed=dedent("""\
                import torch
                def step(model, opt, scaler, loss):
                    scaler.scale(loss).backward()
                    scaler.unscale_(opt)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    scaler.step(opt)
                    scaler.update()
            """),
        ),
        Invalid(
            dedent("""\
                from torch.nn.utils import clip_grad_norm_
                def step(model, opt, scaler, loss):
                    scaler.scale(loss).backward()
                    scaler.unscale_(opt)
                    clip_grad_norm_(model.parameters(), 1.0, 2.0, True)
                    scaler.step(opt)
                    scaler.update()
            """),
            fixed=dedent("""\
                from torch.nn.utils import clip_grad_norm_
                def step(model, opt, scaler, loss):
                    scaler.scale(loss).backward()
                    scaler.unscale_(opt)
                    clip_grad_norm_(model.parameters(), 1.0, 2.0)
                    scaler.step(opt)
                    scaler.update()
            """),
        ),
    )

    def check(self) -> Iterator[Violation]:
        for site in self.facts.call_index.calls_to(_CLIP_NORM):
            arg = self._error_if_nonfinite_true(site.node)
            if arg is None:
                continue
            scaler = self.facts.scaler_presence.scaler_in_use_around(site)
            if scaler is None or self._overflow_handled(site):
                continue
            message = (
                f"`error_if_nonfinite=True` raises on every overflow step `{scaler}` would skip: with a GradScaler "
                "inf/NaN gradients are expected and `scaler.step` skips them; drop the keyword"
            )
            if arg.keyword is None and arg is not site.node.args[-1]:
                yield self.violation(site.node, message, fix=NoFix("the positional `True` is followed by other arguments"))
                continue
            fix = Fix.safe("Drop `error_if_nonfinite=True`", {site.node: E.remove_arg(site.node, arg)})
            if self.facts.scaling.may_be_built_disabled(scaler, site.ctx.scope) or self.facts.checkpoints.scaler_may_be_none(scaler, site.ctx):
                # With AMP off (a disabled or absent scaler) the keyword is the run's only guard against NaN
                # gradients: dropping it turns the error into a NaN step there.
                fix = Fix.unsafe(fix.message, fix.changes)
            yield self.violation(site.node, message, fix=fix)

    def _overflow_handled(self, site: CallSite) -> bool:
        """The clip's RuntimeError is caught by a handler that skips the step while ``update()``
        still runs on its path (in it, in ``finally``, or after the ``try`` when it falls through)."""
        facts = self.facts
        events = facts.timeline.events_by_scope.get(site.ctx.scope, [])
        for try_node, handler in facts.handlers.handlers_catching_runtime_error(site.ctx):
            in_handler = [e for e in events if facts.tree.within(e.call, handler)]
            if any(e.kind in STEP_KINDS for e in in_handler):
                continue
            updates = [e for e in events if e.kind is EventKind.UPDATE]
            if any(e in in_handler or try_node.finalbody and facts.tree.within(e.call, try_node.finalbody) for e in updates):
                return True
            if not leaves_block(handler) and any(
                facts.control_flow.reaches(site.ctx, e.ctx) and not facts.tree.within(e.call, try_node) for e in updates
            ):
                return True
        return False

    def _error_if_nonfinite_true(self, call: cst.Call) -> cst.Arg | None:
        arg = S.keyword_arg(call, "error_if_nonfinite")
        if arg is None:
            positionals = S.positional_args(call)
            arg = positionals[3] if len(positionals) > 3 and not S.has_star_args(call) else None
        if arg is not None and S.bool_value(arg.value) is True:
            return arg
        return None
