from __future__ import annotations

from typing import Iterator

import libcst as cst

from amplint.semantic import syntax as S
from amplint.amp import Event, EventKind
from amplint.semantic import CallSite
from amplint.fix import Fix, NoFix
from amplint.model import FixSafety
from amplint.rules.base import Invalid, Rule, Violation

# Events that must not run under autocast.
_OFFENDING = (EventKind.SCALE_BACKWARD, EventKind.BACKWARD, EventKind.AUTOGRAD_BACKWARD, EventKind.AUTOGRAD_GRAD, EventKind.OPTIMIZER_STEP, EventKind.SCALER_STEP)
# Events a moved tail may hold besides the offending ones.
_STEP_EVENTS = frozenset(_OFFENDING) | {EventKind.UPDATE, EventKind.ZERO_GRAD, EventKind.CLIP, EventKind.UNSCALE} - {EventKind.AUTOGRAD_GRAD}
# Calls that only read or log a value (``loss.item()``, ``print(...)``, ``writer.add_scalar(...)``).
_VALUE_CALLS = frozenset(
    {"item", "detach", "cpu", "float", "int", "round", "str", "format", "len", "get_last_lr", "get_lr", "get_scale",
     "tolist", "numpy", "clone"}
)
_LOG_CALLS = frozenset(
    {"print", "log", "log_dict", "info", "debug", "warning", "add_scalar", "add_scalars", "set_postfix",
     "set_description", "write", "append", "update"}
)


def _callee_last(call: cst.Call) -> str | None:
    text = S.dotted(call.func)
    if text is not None:
        return text.rsplit(".", 1)[-1]
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    return None


class BackwardInAutocast(Rule):
    """
    ## What it does
    Finds a backward pass (`loss.backward()`, `scaler.scale(loss).backward()`,
    `torch.autograd.backward`, `torch.autograd.grad`) or an optimizer step (`optimizer.step()`,
    `scaler.step(optimizer)`) written inside an enabled autocast region: a `with torch.autocast(...)`
    block in any spelling (a `ctx` variable, `partial(torch.autocast, ...)`, a helper that returns
    or yields one, `accelerator.autocast()`), or a function decorated with autocast. A region whose
    `enabled` is the literal `False` is not an autocast region.

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
    that computes something after the backward, a multi-item `with`, a decorated function, a
    `torch.autograd.grad` whose result the block goes on to use) is reported without a fix.

    ## References
    - [Automatic Mixed Precision examples: typical mixed precision training](https://pytorch.org/docs/stable/notes/amp_examples.html#typical-mixed-precision-training)
    - [Automatic Mixed Precision examples: gradient penalty](https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-penalty)
    - [torch.amp: autocast](https://pytorch.org/docs/stable/amp.html#autocasting)
    - [AMP recipe](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    """

    code = "AMP002"
    name = "backward-in-autocast"
    summary = "Backward pass or optimizer step inside an autocast region"
    fix_safety = FixSafety.SOMETIMES
    # Literal substrings for the prefilter: an autocast region (a `ctx` variable or helper included) always spells autocast somewhere in the file.
    triggers = ("autocast",)

    valid = (
        "import torch\nwith torch.autocast('cuda'):\n    loss = model(x)\nloss.backward()\noptimizer.step()\n",
        "import torch\nwith torch.autocast('cuda', enabled=False):\n    loss = model(x)\n    loss.backward()\n",
        "import torch\nwith torch.autocast('cuda'):\n    loss = model(x)\n    lr_scheduler.step()\n",
        "import torch\nwith torch.autocast('cuda'):\n    def closure():\n        loss = model(x)\n        loss.backward()\n        return loss\n",
    )
    invalid = (
        Invalid(
            "import torch\nwith torch.autocast('cuda'):\n    loss = model(x)\n    # backward\n    loss.backward()\n    optimizer.step()\n",
            fixed="import torch\nwith torch.autocast('cuda'):\n    loss = model(x)\n# backward\nloss.backward()\noptimizer.step()\n",
        ),
        Invalid(
            "import torch\nwith torch.autocast('cuda'):\n    loss = model(x)\n    loss.backward()\n    total = loss.item() + model.extra()\n",
        ),
        Invalid(
            "import torch\n@torch.autocast('cuda')\ndef step(loss):\n    loss.backward()\n",
        ),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        offending: list[tuple[Event, cst.With | None]] = []
        for event in facts.events:
            if event.kind not in _OFFENDING:
                continue
            regions = facts.enclosing_autocast(event.ctx)
            if not regions:
                continue
            innermost = regions[-1].node
            offending.append((event, innermost if isinstance(innermost, cst.With) else None))
        if not offending:
            return
        plans: dict[cst.With, Fix | NoFix] = {}
        for event, with_node in offending:
            if with_node is not None and with_node not in plans:
                plans[with_node] = self._plan(with_node, [e for e, w in offending if w is with_node])
            fix = plans[with_node] if with_node is not None else NoFix("the region is a decorated function: move the backward and step out of it by hand")
            line = facts.position(regions_line_node(facts, event)).start.line
            yield self.violation(event.call, self._message(event, line), fix=fix)

    def _message(self, event: Event, line: int) -> str:
        what = {
            EventKind.SCALE_BACKWARD: "Backward pass",
            EventKind.BACKWARD: "Backward pass",
            EventKind.AUTOGRAD_BACKWARD: "`torch.autograd.backward`",
            EventKind.AUTOGRAD_GRAD: "`torch.autograd.grad`",
            EventKind.OPTIMIZER_STEP: "Optimizer step",
            EventKind.SCALER_STEP: f"`{event.site.func_text or 'scaler.step'}()`",
        }[event.kind]
        if event.kind == EventKind.AUTOGRAD_GRAD:
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
            regions = facts.enclosing_autocast(event.ctx)
            if len(regions) != 1 or regions[0].node is not with_node:
                return NoFix("the statement is inside more than one autocast region")
        statements = list(body.body)
        first = len(statements)
        for event in events:
            top = self._top_statement(event.ctx.stmt, body)
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

    def _top_statement(self, stmt: cst.CSTNode | None, body: cst.IndentedBlock) -> cst.CSTNode | None:
        """The statement of ``body`` that holds ``stmt`` (through ``if`` blocks only)."""
        facts = self.facts
        node = stmt
        while node is not None:
            block = facts.parent_of(node)
            if block is body:
                return node
            owner = facts.parent_of(block) if block is not None else None
            if isinstance(owner, cst.Else):
                owner = facts.parent_of(owner)
            if not isinstance(owner, cst.If):
                return None
            node = owner
        return None

    def _movable(self, stmt: cst.CSTNode) -> bool:
        if isinstance(stmt, cst.If):
            if not all(self._safe_call(site) for site in self.facts.calls_by_stmt.get(stmt, [])):
                return False
            blocks = [stmt.body]
            orelse = stmt.orelse
            while orelse is not None:
                blocks.append(orelse.body)
                orelse = orelse.orelse if isinstance(orelse, cst.If) else None
            return all(isinstance(b, cst.IndentedBlock) and all(self._movable(s) for s in b.body) for b in blocks)
        if not isinstance(stmt, cst.SimpleStatementLine):
            return False
        for small in stmt.body:
            if not isinstance(small, (cst.Expr, cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Pass)):
                return False
        return all(self._safe_call(site) for site in self.facts.calls_by_stmt.get(stmt, []))

    def _safe_call(self, site: CallSite) -> bool:
        facts = self.facts
        event = facts.event_by_call.get(site.node)
        if event is not None and event.kind in _STEP_EVENTS:
            return True
        call = site.node
        if self._inside_step_event(site):
            return True
        last = _callee_last(call)
        if last is None:
            return False
        if last == "step" and isinstance(call.func, cst.Attribute):
            receiver = S.dotted(call.func.value) or ""
            return "sched" in receiver.rsplit(".", 1)[-1].lower()
        if last == "update":
            return ".item()" in facts.code(call)
        return last in _VALUE_CALLS or last in _LOG_CALLS or last.startswith("log")

    def _inside_step_event(self, site: CallSite) -> bool:
        """An argument of an event call (``model.parameters()`` in a clip, ``scaler.scale(loss)``)."""
        facts = self.facts
        for event in facts.events_by_scope.get(site.ctx.scope, []):
            if event.kind in _STEP_EVENTS and event.ctx.stmt is site.ctx.stmt and event.call is not site.node:
                if facts.contains(event.call, site.node):
                    return True
        return False


def regions_line_node(facts, event: Event) -> cst.CSTNode:
    """The node that opened the innermost autocast region around ``event``."""
    return facts.enclosing_autocast(event.ctx)[-1].node
