from __future__ import annotations

import re
from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.fix import Fix, NoFix
import amplint.fix.edits as E
from amplint.model import FixSafety
from amplint.rules.base import Invalid, Rule, Violation
from amplint.semantic import CallSite, Loop, Scope

# Functions that run once per run, not per step: a scaler built there is right.
_SETUP_NAME = re.compile(
    r"^(__init__|__post_init__|setup|_?setup_\w*|_setup|_?configure\w*|_?build\w*|_?init\w*|on_\w*_start|_?create\w*|"
    r"_?make\w*|_?prepare\w*|_?get_\w*scaler\w*|fit|_?run_fold\w*|_?run_trial\w*|_?run_experiment\w*)$"
)
_LAZY_GUARD = re.compile(r"\bis None\b|==\s*0\b|\bhasattr\b|\bfirst\b")


class ScalerInLoop(Rule):
    """
    ## What it does
    Finds a GradScaler (`torch.amp.GradScaler`, `torch.GradScaler`, the deprecated
    `torch.cuda.amp.GradScaler`, `ShardedGradScaler`, any alias) constructed inside a loop that
    runs training iterations (the batch loop, or an epoch loop around it), or inside a function
    that runs once per step or epoch: one called inside a training loop of the same file,
    whatever its name (`fit_one_epoch`, `run_epoch`), or one named for a single step, batch or
    epoch (`train_step`, `training_step`, `train_on_batch`). A function that is a whole run
    itself (it builds its optimizer, or loops over epochs around a loop over batches) is not.

    Not reported: a loop over independent runs, folds, trials or seeds that builds a fresh
    optimizer in the same iteration (k-fold cross-validation, hyper-parameter sweeps), a scaler
    built lazily under `if scaler is None:`, and a scaler built in `__init__`, `setup` or
    `configure_*`.

    ## Why is this bad?
    The scaler's state is its loss scale and growth tracker. A fresh scaler starts at 65536 every
    time, so the scale never adapts: each step that overflows at that scale is skipped (on a model
    whose gradients always overflow there, every step), and the scale never grows after
    `growth_interval` clean steps. The AMP examples create the scaler "once at the beginning of
    training".

    ## Example
    ```python
    import torch

    def train(model, loader, optimizer):
        for x, y in loader:
            scaler = torch.amp.GradScaler("cuda")
            with torch.autocast("cuda"):
                loss = model(x, y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
    ```

    ## Use instead
    ```python
    import torch

    def train(model, loader, optimizer):
        scaler = torch.amp.GradScaler("cuda")
        for x, y in loader:
            with torch.autocast("cuda"):
                loss = model(x, y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
    ```

    ## Fix safety
    The fix is safe: it moves the assignment, with its comments, to just before the outermost
    training loop, so one scaler serves the whole run. It is offered only for a plain
    `name = GradScaler(...)` statement whose arguments use no name bound inside the loop, that is
    not under an `if` inside the loop, that is the only assignment to that name in the loop, and
    that is not the only statement of its block.
    A scaler built in a per-step or per-epoch function is reported without a fix: build it where
    the run is set up and pass it in.

    ## References
    - [Automatic Mixed Precision examples: typical mixed precision training](https://pytorch.org/docs/stable/notes/amp_examples.html#typical-mixed-precision-training)
    - [torch.amp.GradScaler](https://pytorch.org/docs/stable/amp.html#gradient-scaling)
    - [AMP recipe](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    """

    code = "AMP004"
    name = "scaler-in-loop"
    summary = "GradScaler constructed per step or per epoch"
    fix_safety = FixSafety.SAFE
    fix_withheld = (
        "when the scaler's arguments change in the loop, it is built under a condition there, or the "
        "function cannot see the setup"
    )
    # Literal substrings for the prefilter: every scaler construction names GradScaler (ShardedGradScaler and aliases too).
    triggers = ("GradScaler",)

    valid = (
        dedent("""\
        import torch
        scaler = torch.amp.GradScaler('cuda')
        for x in loader:
            scaler.scale(model(x)).backward()
            scaler.step(opt)
            scaler.update()
        """),
        dedent("""\
        import torch
        for fold in range(5):
            model = Net()
            opt = torch.optim.AdamW(model.parameters())
            scaler = torch.amp.GradScaler('cuda')
            for x in loader:
                scaler.scale(model(x)).backward()
                scaler.step(opt)
                scaler.update()
        """),
        dedent("""\
        import torch
        class Trainer:
            def __init__(self):
                self.scaler = torch.amp.GradScaler('cuda')
            def training_step(self, x):
                self.scaler.scale(self.model(x)).backward()
        """),
    )
    invalid = (
        Invalid(
            dedent("""\
            import torch
            for x in loader:
                # one scaler
                scaler = torch.amp.GradScaler('cuda')
                scaler.scale(model(x)).backward()
                scaler.step(opt)
                scaler.update()
            """),
            fixed=dedent("""\
            import torch
            # one scaler
            scaler = torch.amp.GradScaler('cuda')
            for x in loader:
                scaler.scale(model(x)).backward()
                scaler.step(opt)
                scaler.update()
            """),
        ),
        Invalid(
            dedent("""\
            import torch
            def train_one_epoch(model, loader, opt):
                scaler = torch.amp.GradScaler('cuda')
                for x in loader:
                    scaler.scale(model(x)).backward()
                    scaler.step(opt)
                    scaler.update()
            """),
        ),
        Invalid(
            dedent("""\
            import torch
            for epoch in range(10):
                scaler = torch.amp.GradScaler('cuda', init_scale=2.0 ** epoch)
                for x in loader:
                    scaler.scale(model(x)).backward()
                    scaler.step(opt)
                    scaler.update()
            """),
        ),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        for site in facts.scaling.scaler_construction_sites:
            function = facts.callgraph.function_of(site.ctx.scope)
            name = function.node.name.value if function is not None else None
            if name is not None and _SETUP_NAME.match(name) or self._lazily_guarded(site):
                continue
            loops = facts.training.training_loops_within_run(site.ctx)
            if loops is None:
                continue  # inside a loop over independent runs
            if loops:
                yield self.violation(
                    site.node,
                    f"GradScaler built inside the training loop on line {facts.position(loops[-1].node).start.line}: "
                    "its loss scale restarts every iteration; build it once before the loop",
                    fix=self._hoist(site, loops[0]),
                )
            elif function is not None and self._per_step(function.scope):
                yield self.violation(
                    site.node,
                    f"GradScaler built in `{name}`, which runs once per step or epoch: its loss scale restarts each "
                    "call; build it once where the run is set up and pass it in",
                    fix=NoFix("build the scaler where the model and optimizer are set up and pass it to this function"),
                )

    # -- deciding
    def _lazily_guarded(self, site: CallSite) -> bool:
        """``if scaler is None: scaler = GradScaler()`` builds it once."""
        for branch in site.ctx.branches:
            if isinstance(branch.node, cst.If):
                test = self.facts.code(branch.node.test)
                if _LAZY_GUARD.search(test) or "scaler" in test.lower():
                    return True
        return False

    def _per_step(self, scope: Scope) -> bool:
        return self.facts.callgraph.function_of(scope) is not None and scope in self.facts.training.per_step_functions

    # -- fixing
    def _hoist(self, site: CallSite, outer: Loop) -> Fix | NoFix:
        facts = self.facts
        stmt = site.ctx.stmt
        if not E.single_simple_statement(stmt) or not isinstance(stmt.body[0], cst.Assign):
            return NoFix("only a plain `scaler = GradScaler(...)` statement is moved automatically")
        assign = stmt.body[0]
        if assign.value is not site.node or len(assign.targets) != 1:
            return NoFix("only a plain `scaler = GradScaler(...)` statement is moved automatically")
        target = facts.code(assign.targets[0].target).strip()
        for branch in site.ctx.branches:
            if facts.tree.contains(outer.node, branch.node) and not (isinstance(branch.node, cst.Try) and branch.part == "body"):
                return NoFix("the scaler is built under a condition inside the loop")
        bound = facts.training.names_bound_in_loop(outer) - {target}
        for ref in facts.callgraph.argument_references(site):
            if any(".".join(ref.parts[: i + 1]) in bound for i in range(len(ref.parts))):
                return NoFix(f"its arguments use `{facts.code(ref.node)}`, which the loop changes")
        if any(
            a.node is not assign and a.ctx.scope is site.ctx.scope and outer in a.ctx.loops
            for a in facts.assignments_to(target, site.ctx.scope)
        ):
            return NoFix(f"`{target}` is assigned again inside the loop")
        located = facts.tree.statement_block(stmt)
        if located is None or len(located[1]) < 2:
            return NoFix("the statement is alone in its block")
        if facts.tree.statement_block(outer.node) is None:
            return NoFix("the loop is not a statement of a block")
        return Fix.safe("Build the GradScaler once, before the training loop", E.move_before(outer.node, stmt))
