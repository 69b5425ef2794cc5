from __future__ import annotations

from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.amp import Event, EventKind
from amplint.fix import Fix, NoFix
from amplint.model import FixSafety
from amplint.rules.base import Invalid, Rule, Violation
from amplint.semantic import CallSite
import amplint.semantic.syntax as S

K = EventKind
# Events that must not run under autocast.
_OFFENDING = (K.SCALE_BACKWARD, K.BACKWARD, K.AUTOGRAD_BACKWARD, K.AUTOGRAD_GRAD, K.OPTIMIZER_STEP, K.SCALER_STEP)
# Events a moved tail may hold besides the offending ones.
_STEP_EVENTS = frozenset(_OFFENDING) | {K.UPDATE, K.ZERO_GRAD, K.CLIP, K.UNSCALE} - {K.AUTOGRAD_GRAD}
# Calls that only read or log a value (``loss.item()``, ``print(...)``, ``writer.add_scalar(...)``).
_VALUE_CALLS = frozenset(
    {"item", "detach", "cpu", "float", "int", "round", "str", "format", "len", "get_last_lr", "get_lr", "get_scale",
     "tolist", "numpy", "clone"}
)
_LOG_CALLS = frozenset(
    {"print", "log", "log_dict", "info", "debug", "warning", "add_scalar", "add_scalars", "set_postfix",
     "set_description", "write", "append", "update"}
)
_WHAT = {
    K.SCALE_BACKWARD: "Backward pass", K.BACKWARD: "Backward pass", K.AUTOGRAD_BACKWARD: "`torch.autograd.backward`",
    K.AUTOGRAD_GRAD: "`torch.autograd.grad`", K.OPTIMIZER_STEP: "Optimizer step",
}


class BackwardInAutocast(Rule):
    """
    ## What it does
    Finds a backward pass (`loss.backward()`, `scaler.scale(loss).backward()`,
    `torch.autograd.backward`, `torch.autograd.grad`) or an optimizer step (`optimizer.step()`,
    `scaler.step(optimizer)`) written inside an enabled autocast region: a `with torch.autocast(...)`
    block in any spelling (a `ctx` variable, `partial(torch.autocast, ...)`, a helper that returns
    or yields one, `accelerator.autocast()`, a context class chosen by a flag such as
    `ctx = accelerator.autocast if mixed else nullcontext` then `with ctx():`), or a function
    decorated with autocast. A region whose
    `enabled` is the literal `False` is not an autocast region. A block only named like autocast
    (`with amp_autocast():` on a parameter) counts where the file passes that parameter something
    that builds an autocast (`partial(torch.autocast, ...)`, the class itself); one that only ever
    gets `suppress` or `nullcontext`, or that nothing in the file passes, does not, and neither does
    a same-file helper or variable that only ever holds a null context.

    ## Why is this bad?
    The AMP documentation keeps only the forward pass and the loss inside autocast: "Backward
    passes under autocast are not recommended." Backward ops already run in the dtype autocast
    chose for the matching forward op; with autocast still on, ops whose forward ran in float32
    (an `autocast(enabled=False)` subregion, a custom function) get their backward autocast to the
    reduced dtype, and custom backward functions without `custom_bwd` see autocast enabled. The
    optimizer step has nothing to gain from autocast either.

    `torch.autograd.grad` for a gradient penalty (WGAN-GP, R1) is reported too: it is a backward
    pass. The AMP examples' "Gradient penalty" section computes `torch.autograd.grad` on the
    scaled outputs *outside* autocast, unscales the result, and re-enters autocast only to compute
    the penalty term. The penalty term itself inside autocast is fine and is not reported.

    ## Example
    ```python
    import torch

    def train(model, loader, optimizer, scaler):
        for x, y in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(x, y)
                scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
    ```

    ## Use instead
    ```python
    import torch

    def train(model, loader, optimizer, scaler):
        for x, y in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(x, y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
    ```

    ## Fix safety
    The fix is safe. It applies only when the offending statements are the tail of a single-item
    `with` block whose remaining body is not empty, and the moved tail holds nothing but backward,
    `step`, `update`, `zero_grad`, clipping, `unscale_`, scheduler steps and logging of the loss
    (also inside an `if`, as with gradient accumulation). The tail moves, with its comments, to
    just after the block, which is where the documented loop has it. Everything else (a statement
    that computes something after the backward, a multi-item `with`, a one-line `with` body, a
    statement inside two autocast regions, a decorated function, a `torch.autograd.grad` whose
    result the block goes on to use) is reported without a fix.

    ## References
    - [Automatic Mixed Precision examples: typical mixed precision training](https://pytorch.org/docs/stable/notes/amp_examples.html#typical-mixed-precision-training)
    - [Automatic Mixed Precision examples: gradient penalty](https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-penalty)
    - [torch.amp: autocast](https://pytorch.org/docs/stable/amp.html#autocasting)
    - [AMP recipe](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    """

    code = "AMP002"
    name = "backward-in-autocast"
    summary = "Backward pass or optimizer step inside an autocast region"
    fix_safety = FixSafety.SAFE
    fix_withheld = "for a multi-item `with`, a block that goes on after the backward, or a decorated function"
    # Literal substrings for the prefilter: an autocast region (a `ctx` variable or helper included) always spells autocast somewhere in the file.
    triggers = ("autocast",)

    valid = (
        dedent("""\
        from contextlib import suppress
        def train_one_epoch(model, loader, optimizer, amp_autocast=suppress):
            for x, y in loader:
                with amp_autocast():
                    loss = model(x, y)
                    loss.backward()
                    optimizer.step()
        train_one_epoch(model, loader, optimizer, amp_autocast=suppress)
        """),
        dedent("""\
        import torch
        with torch.autocast('cuda'):
            loss = model(x)
        loss.backward()
        optimizer.step()
        """),
        dedent("""\
        import torch
        with torch.autocast('cuda', enabled=False):
            loss = model(x)
            loss.backward()
        """),
        dedent("""\
        import torch
        with torch.autocast('cuda'):
            loss = model(x)
            lr_scheduler.step()
        """),
        dedent("""\
        import torch
        with torch.autocast('cuda'):
            def closure():
                loss = model(x)
                loss.backward()
                return loss
        """),
    )
    invalid = (
        Invalid(
            dedent("""\
            import torch
            with torch.autocast('cuda'):
                loss = model(x)
                # backward
                loss.backward()
                optimizer.step()
            """),
            fixed=dedent("""\
            import torch
            with torch.autocast('cuda'):
                loss = model(x)
            # backward
            loss.backward()
            optimizer.step()
            """),
        ),
        Invalid(
            dedent("""\
            import torch
            with torch.autocast('cuda'):
                loss = model(x)
                loss.backward()
                total = loss.item() + model.extra()
            """),
        ),
        Invalid(
            dedent("""\
            import torch
            @torch.autocast('cuda')
            def step(loss):
                loss.backward()
            """),
        ),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        offending: list[tuple[Event, cst.CSTNode]] = []
        for event in facts.timeline.events:
            regions = self._regions(event) if event.kind in _OFFENDING else None
            if regions:
                offending.append((event, regions[-1].node))
        plans: dict[cst.With, Fix | NoFix] = {}
        for event, region in offending:
            if not isinstance(region, cst.With):
                fix = NoFix("the region is a decorated function: move the backward and step out of it by hand")
            else:
                if region not in plans:
                    plans[region] = self._plan(region, [e for e, r in offending if r is region])
                fix = plans[region]
            yield self.violation(event.call, self._message(event, facts.position(region).start.line), fix=fix)

    def _regions(self, event: Event) -> list:
        """The enabled autocast regions around the event that can be autocast (a ``with amp_autocast():``
        whose parameter only ever holds ``suppress`` is not one), less those the event's own branch
        switches off (the ``else`` of ``if args.amp:`` inside ``autocast(enabled=args.amp)``)."""
        return [
            r for r in self.facts.autocast.enclosing_autocast(event.ctx)
            if r.may_be_autocast and not self._disabled_on_this_arm(r, event)
        ]

    def _disabled_on_this_arm(self, region, event: Event) -> bool:
        """The region's ``enabled=`` is a test the event sits in the false arm of, inside the
        ``with``, and nothing in the block assigns what the test reads."""
        facts = self.facts
        enabled = S.keyword_arg_value(region.call, "enabled") if region.call is not None else None
        if enabled is None or not isinstance(region.node, cst.With):
            return False
        text, negated = facts.tree.condition_key(enabled)
        reads = {".".join(ref.parts) for ref in facts.references_within(enabled)}
        if any(target in reads for a in facts.assignments_in(event.ctx.scope)
               if facts.tree.contains(region.node, a.node) for target in a.targets):
            return False
        for branch in event.ctx.branches:
            test = getattr(branch.node, "test", None)
            if test is None or branch.part not in ("body", "orelse") or not facts.tree.contains(region.node, branch.node):
                continue
            test_text, test_negated = facts.tree.condition_key(test)
            if test_text == text and ((branch.part == "body") != test_negated) == negated:
                return True  # on this arm the flag has the value that switches the region off
        return False

    def _message(self, event: Event, line: int) -> str:
        what = _WHAT.get(event.kind) or f"`{event.site.func_text or 'scaler.step'}()`"
        if event.kind is K.AUTOGRAD_GRAD:
            return (
                f"{what} runs inside the autocast region opened on line {line}; compute the gradients outside "
                "autocast and re-enter it for the penalty term"
            )
        return f"{what} runs inside the autocast region opened on line {line}; only the forward pass and the loss belong there"

    # -- the fix
    def _plan(self, with_node: cst.With, events: list[Event]) -> Fix | NoFix:
        facts = self.facts
        if len(with_node.items) != 1:
            return NoFix("a multi-item `with`: move the backward and step after the block by hand")
        body = with_node.body
        if not isinstance(body, cst.IndentedBlock):
            return NoFix("a one-line `with` body")
        for event in events:
            regions = self._regions(event)
            if len(regions) != 1 or regions[0].node is not with_node:
                return NoFix("the statement is inside more than one autocast region")
        statements = list(body.body)
        first = len(statements)
        for event in events:
            top = facts.tree.top_statement_through_ifs(event.ctx.stmt, body)
            if top is None:
                return NoFix("the statement is nested in another block of the `with` body")
            first = min(first, statements.index(top))
        head, tail = statements[:first], statements[first:]
        if not head:
            return NoFix("the whole block would move: nothing would stay under autocast")
        for stmt in tail:
            if not self._movable(stmt):
                return NoFix(f"the block goes on after the backward (line {facts.position(stmt).start.line}): move the backward and step after the block by hand")
        new_with = with_node.with_changes(body=body.with_changes(body=head))
        position = facts.position(with_node).start
        return Fix.safe(
            "Move the backward pass and optimizer step after the autocast block",
            {with_node: cst.FlattenSentinel([new_with, *tail])},
            group=f"{self.code}:{position.line}:{position.column}",
        )

    def _movable(self, stmt: cst.CSTNode) -> bool:
        """The statement may leave the autocast block: step events and logging only (``if`` blocks of them too)."""
        calls_safe = all(self._safe_call(site) for site in self.facts.calls_by_stmt.get(stmt, []))
        if isinstance(stmt, cst.If):
            return calls_safe and all(
                isinstance(b, cst.IndentedBlock) and all(self._movable(s) for s in b.body) for b in S.if_chain_blocks(stmt)
            )
        if not isinstance(stmt, cst.SimpleStatementLine):
            return False
        simple = (cst.Expr, cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Pass)
        return all(isinstance(small, simple) for small in stmt.body) and calls_safe

    def _safe_call(self, site: CallSite) -> bool:
        facts = self.facts
        event = facts.timeline.event_by_call.get(site.node)
        if event is not None and event.kind in _STEP_EVENTS or facts.timeline.inside_event_call(site, _STEP_EVENTS):
            return True
        call = site.node
        last = S.callee_last_name(call)
        if last is None:
            return False
        if last == "step" and isinstance(call.func, cst.Attribute):
            receiver = S.dotted(call.func.value) or ""
            return "sched" in receiver.rsplit(".", 1)[-1].lower()
        if last == "update":
            return ".item()" in facts.code(call)
        return last in _VALUE_CALLS or last in _LOG_CALLS or last.startswith("log")
