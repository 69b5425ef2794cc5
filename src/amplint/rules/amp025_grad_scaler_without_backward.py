from __future__ import annotations

from textwrap import dedent
from typing import Iterator

import libcst as cst

import amplint.fix.edits as E
from amplint.amp.events import EventKind
from amplint.amp.scalers import built_disabled
from amplint.fix import Fix, NoFix
from amplint.model import FixSafety, Severity
from amplint.rules.base import Invalid, Rule, Violation
from amplint.semantic.records import Assignment, CallSite
import amplint.semantic.syntax as S

# Any of these in the file means something in it may train (and a scaler might serve it).
_TRAINING_EVENTS = frozenset({
    EventKind.BACKWARD, EventKind.SCALE_BACKWARD, EventKind.AUTOGRAD_BACKWARD, EventKind.AUTOGRAD_GRAD,
    EventKind.SCALE, EventKind.UNSCALE, EventKind.SCALER_STEP, EventKind.OPTIMIZER_STEP, EventKind.UPDATE,
})
# Method names of calls that train or backpropagate through a framework or helper
# (``accelerator.backward``, ``engine.backward``, ``manual_backward``, ``trainer.fit``,
# ``trainer.train``, ``scheduler.step``): the file is then not inference-only.
_TRAINING_METHODS = ("backward", "step", "fit", "train")
# Reading a scaler's settings or state changes nothing: the scaler still scales no loss.
_INERT_METHODS = frozenset({
    "get_scale", "is_enabled", "state_dict", "load_state_dict", "get_growth_factor", "get_backoff_factor",
    "get_growth_interval",
})


class GradScalerWithoutBackward(Rule):
    """
    ## What it does
    Finds a `GradScaler` built in a file that never backpropagates: no `.backward(...)` (of a
    tensor, an Accelerator, a DeepSpeed engine or Lightning's `manual_backward`), no
    `scaler.scale(...)`, `torch.autograd.grad`, `.step(...)`, `.fit(...)` or `.train(...)` call
    anywhere in it. These are inference, evaluation and export scripts.

    The rule only reports a scaler that stays where it is built: a local variable of a function
    (or of the `if __name__ == "__main__":` block) used at most to read its state
    (`get_scale()`, `state_dict()`, `load_state_dict(...)`), or a construction whose value is
    discarded. It is silent when the scaler escapes to code outside the file: returned, passed
    to a call, stored on `self` or in a container, assigned to another name, or bound at module
    level (another module may import it).

    ## Why is this bad?
    A GradScaler does three things: multiply a loss before `backward()` (`scale`), divide the
    gradients again (`unscale_`, `step`) and adjust the scale (`update`). Without a backward
    there are no gradients, so the scaler does nothing: the forward pass, under autocast or not,
    runs exactly as without it (torch `amp/grad_scaler.py`: none of its methods is called by
    `autocast` or by a module's forward). Its presence usually means the script's author
    believes fp16 inference needs it, or that it was copied from a training script; with
    `torch.cuda.amp.GradScaler()` on a machine without CUDA it also warns at construction.

    ## Example
    ```python
    import torch

    @torch.no_grad()
    def evaluate(model, loader):
        scaler = torch.amp.GradScaler("cuda")
        for x, y in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                preds = model(x)
    ```

    ## Use instead
    ```python
    import torch

    @torch.no_grad()
    def evaluate(model, loader):
        for x, y in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                preds = model(x)
    ```

    ## Fix safety
    The fix deletes the assignment `scaler = GradScaler(...)` (or the bare construction). It is
    unsafe: it also drops the warning a CUDA scaler gives on a machine without CUDA. There is no
    fix when the scaler's state is read later, when the arguments call functions (their side
    effects would go too), or when the assignment shares its line with other statements or
    targets.

    ## References
    - [Automatic Mixed Precision package - torch.amp: Gradient Scaling](https://pytorch.org/docs/stable/amp.html#gradient-scaling)
    - [Automatic Mixed Precision examples](https://pytorch.org/docs/stable/notes/amp_examples.html)
    - torch 2.13 `torch/amp/grad_scaler.py`: `scale`, `unscale_`, `step`, `update` are the only
      methods that act on a loss or gradients
    """

    code = "AMP025"
    name = "grad-scaler-without-backward"
    summary = "a `GradScaler` built in code that never backpropagates (inference, evaluation, export)"
    severity = Severity.WARNING
    fix_safety = FixSafety.UNSAFE
    fix_withheld = "when its state is read, its arguments call functions, or it shares a line"
    triggers = ("GradScaler",)

    valid = (
        dedent("""\
        import torch
        scaler = torch.amp.GradScaler("cuda")
        def train(model, optimizer, x):
            with torch.autocast("cuda"):
                loss = model(x)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        """),
        # The scaler escapes: a helper elsewhere may train with it.
        dedent("""\
        import torch
        from mylib.training import fit_one_epoch
        def main(model, loader):
            scaler = torch.amp.GradScaler("cuda")
            fit_one_epoch(model, loader, scaler)
        """),
        # Stored on self: a subclass in another file may train with it.
        dedent("""\
        import torch
        class BaseTrainer:
            def __init__(self, model):
                self.model = model
                self.scaler = torch.amp.GradScaler("cuda")
        """),
        # Returned to the caller.
        dedent("""\
        import torch
        def build_scaler(args):
            scaler = torch.amp.GradScaler("cuda", enabled=args.fp16)
            return scaler
        """),
        # Built disabled on purpose.
        dedent("""\
        import torch
        def evaluate(model, x):
            scaler = torch.amp.GradScaler("cuda", enabled=False)
            return model(x)
        """),
    )
    invalid = (
        Invalid(
            dedent("""\
            import torch

            @torch.no_grad()
            def evaluate(model, loader):
                scaler = torch.amp.GradScaler("cuda")
                for x, y in loader:
                    with torch.autocast("cuda", dtype=torch.float16):
                        preds = model(x)
            """),
            fixed=dedent("""\
            import torch

            @torch.no_grad()
            def evaluate(model, loader):
                for x, y in loader:
                    with torch.autocast("cuda", dtype=torch.float16):
                        preds = model(x)
            """),
            unsafe=True,
        ),
        dedent("""\
        import torch

        def export(model, path):
            scaler = torch.cuda.amp.GradScaler()
            state = torch.load(path)
            model.load_state_dict(state["model"])
            scaler.load_state_dict(state["scaler"])
            torch.onnx.export(model, torch.randn(1, 3, 224, 224), "model.onnx")
        """),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        sites = [s for s in facts.scaling.scaler_construction_sites if not built_disabled(s)]
        if not sites or self._file_may_train():
            return
        for site in sites:
            if site.is_expression_statement:
                yield self.violation(site.node, self._message(), fix=self._fix(site, None))
                continue
            assignment = self._local_assignment(site)
            if assignment is None:
                continue
            uses = self._uses(assignment)
            if uses is None:
                continue
            yield self.violation(site.node, self._message(), fix=self._fix(site, assignment) if not uses else
                                 NoFix(f"`{assignment.targets[0]}`'s state is read later: remove those reads too"))

    def _file_may_train(self) -> bool:
        facts = self.facts
        if any(e.kind in _TRAINING_EVENTS for e in facts.timeline.events):
            return True
        for site in facts.calls:
            method = (site.func_text or "").rsplit(".", 1)[-1]
            if method in _TRAINING_METHODS or method.endswith("backward"):
                return True
        return False

    def _local_assignment(self, site: CallSite) -> Assignment | None:
        """``name = GradScaler(...)`` in a function, or in the ``__main__`` block."""
        assignment = next((a for a in self.facts.assignments if a.value is site.node), None)
        if assignment is None or len(assignment.targets) != 1 or "." in assignment.targets[0] or "[" in assignment.targets[0]:
            return None
        scope = assignment.ctx.scope
        if scope.kind == "function":
            return assignment
        if scope.kind == "module" and any(
            isinstance(b.node, cst.If) and "__main__" in self.facts.code(b.node.test) for b in assignment.ctx.branches
        ):
            return assignment
        return None

    def _uses(self, assignment: Assignment) -> list | None:
        """The inert reads of the scaler's variable (``scaler.get_scale()``); ``None`` when it
        escapes or is used otherwise."""
        facts = self.facts
        name = assignment.targets[0]
        variable = facts.identity.variable(name, assignment.ctx.scope)
        if variable is None:
            return None
        if any(a is not assignment and facts.identity.variable(name, a.ctx.scope) == variable for a in facts.assignments_to(name)):
            return None  # rebound: which value a later read sees is not this one alone
        uses = []
        for ref in facts.records.references:
            if ref.parts[0] != name or facts.identity.variable(name, ref.ctx.scope) != variable:
                continue
            if len(ref.parts) == 2 and ref.role == "call" and ref.parts[1] in _INERT_METHODS:
                uses.append(ref)
                continue
            return None
        return uses

    def _message(self) -> str:
        return (
            "This GradScaler never scales anything: nothing in this file backpropagates (no `.backward()`, "
            "`scaler.scale(...)` or optimizer step) and the scaler does not leave it; inference and evaluation run "
            "the same without it: remove it"
        )

    def _fix(self, site: CallSite, assignment: Assignment | None) -> Fix | NoFix:
        facts = self.facts
        if any("(" in facts.code(arg.value) for arg in site.node.args):
            return NoFix("the scaler's arguments call functions: their side effects would go too")
        stmt = site.ctx.stmt
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return NoFix("the construction shares its line with other statements")
        inner = stmt.body[0]
        if assignment is not None and not (isinstance(inner, cst.Assign) and len(inner.targets) == 1 and inner.value is site.node):
            return NoFix("the assignment binds more than the scaler")
        return Fix.unsafe("Remove the unused GradScaler", {stmt: E.remove_statement(facts, stmt)})

