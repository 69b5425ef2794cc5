from __future__ import annotations

import re
from typing import Iterator

import libcst as cst

from amplint.fix import edits as E
from amplint.semantic import syntax as S
from amplint.semantic import CallSite, Loop, Scope
from amplint.fix import Fix, NoFix
from amplint.model import FixSafety
from amplint.rules.base import Invalid, Rule, Violation

# Functions that run once per run, not per step: a scaler built there is right.
_SETUP_NAME = re.compile(
    r"^(__init__|__post_init__|setup|_?setup_\w*|_setup|_?configure\w*|_?build\w*|_?init\w*|on_\w*_start|_?create\w*|"
    r"_?make\w*|_?prepare\w*|_?get_\w*scaler\w*|fit|_?run_fold\w*|_?run_trial\w*|_?run_experiment\w*)$"
)
# Loop variables / iterables of loops over independent runs (k-fold CV, sweeps, seeds).
_RUN_WORDS = re.compile(
    r"(^|_)(folds?|seeds?|trials?|runs?|repeats?|repetitions?|experiments?|exps?|configs?|cfgs?|hparams?|params_grid|"
    r"grid|sweeps?|splits?|lrs?|learning_rates?|settings?|tasks?|kfold|cv|replicates?|evolve|generations?)(_|$|\d)",
    re.IGNORECASE,
)
_LAZY_GUARD = re.compile(r"\bis None\b|==\s*0\b|\bhasattr\b|\bfirst\b")


class ScalerInLoop(Rule):
    """
    ## What it does
    Finds a GradScaler (`torch.amp.GradScaler`, `torch.GradScaler`, the deprecated
    `torch.cuda.amp.GradScaler`, `ShardedGradScaler`, any alias) constructed inside a loop that
    runs training iterations (the batch loop, or an epoch loop around it), or inside a function
    evidently called once per step or epoch (`train_step`, `training_step`, `train_one_epoch`,
    or any function called inside a training loop of the same file).

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
    not under an `if` inside the loop, and that is the only assignment to that name in the loop.
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
    fix_safety = FixSafety.SOMETIMES
    # Literal substrings for the prefilter: every scaler construction names GradScaler (ShardedGradScaler and aliases too).
    triggers = ("GradScaler",)

    valid = (
        "import torch\nscaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n    scaler.scale(model(x)).backward()\n"
        "    scaler.step(opt)\n    scaler.update()\n",
        "import torch\nfor fold in range(5):\n    model = Net()\n    opt = torch.optim.AdamW(model.parameters())\n"
        "    scaler = torch.amp.GradScaler('cuda')\n    for x in loader:\n        scaler.scale(model(x)).backward()\n"
        "        scaler.step(opt)\n        scaler.update()\n",
        "import torch\nclass Trainer:\n    def __init__(self):\n        self.scaler = torch.amp.GradScaler('cuda')\n"
        "    def training_step(self, x):\n        self.scaler.scale(self.model(x)).backward()\n",
    )
    invalid = (
        Invalid(
            "import torch\nfor x in loader:\n    # one scaler\n    scaler = torch.amp.GradScaler('cuda')\n"
            "    scaler.scale(model(x)).backward()\n    scaler.step(opt)\n    scaler.update()\n",
            fixed="import torch\n# one scaler\nscaler = torch.amp.GradScaler('cuda')\nfor x in loader:\n"
            "    scaler.scale(model(x)).backward()\n    scaler.step(opt)\n    scaler.update()\n",
        ),
        Invalid(
            "import torch\ndef train_one_epoch(model, loader, opt):\n    scaler = torch.amp.GradScaler('cuda')\n"
            "    for x in loader:\n        scaler.scale(model(x)).backward()\n        scaler.step(opt)\n        scaler.update()\n",
        ),
        Invalid(
            "import torch\nfor epoch in range(10):\n    scaler = torch.amp.GradScaler('cuda', init_scale=2.0 ** epoch)\n"
            "    for x in loader:\n        scaler.scale(model(x)).backward()\n        scaler.step(opt)\n        scaler.update()\n",
        ),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        for site in facts.scaler_construction_sites:
            function = facts.function_of(site.ctx.scope)
            name = function.node.name.value if function is not None else None
            if name is not None and _SETUP_NAME.match(name):
                continue
            if self._lazily_guarded(site):
                continue
            loops = self._training_loops_around(site)
            if loops is None:
                continue  # inside a loop over independent runs
            if loops:
                yield self.violation(
                    site.node,
                    f"GradScaler built inside the training loop on line {facts.position(loops[-1].node).start.line}: "
                    "its loss scale restarts every iteration; build it once before the loop",
                    fix=self._hoist(site, loops[0]),
                )
                continue
            if function is not None and self._per_step(function.scope):
                yield self.violation(
                    site.node,
                    f"GradScaler built in `{name}`, which runs once per step or epoch: its loss scale restarts each "
                    "call; build it once where the run is set up and pass it in",
                    fix=NoFix("build the scaler where the model and optimizer are set up and pass it to this function"),
                )

    # -- deciding
    def _is_run_loop(self, loop: Loop) -> bool:
        facts = self.facts
        node = loop.node
        header = facts.code(node.target) + " " + facts.code(node.iter) if isinstance(node, cst.For) else facts.code(node.test)
        if _RUN_WORDS.search(header):
            return True
        for assignment in facts.assignments:
            if assignment.ctx.scope is loop.scope and assignment.ctx.loops and assignment.ctx.loops[-1] is loop:
                if any(target in facts.optimizer_builds or target in facts.optimizers for target in assignment.targets):
                    if isinstance(assignment.value, cst.Call):
                        return True
        return False

    def _training_loops_around(self, site: CallSite) -> list[Loop] | None:
        """Training loops around ``site`` up to the innermost run loop (outermost first); ``None``
        when the innermost enclosing loop is itself a loop over independent runs."""
        facts = self.facts
        out: list[Loop] = []
        for loop in reversed(site.ctx.loops):
            if self._is_run_loop(loop):
                if not out:
                    return None
                break
            if loop not in facts.training_loops:
                break
            out.append(loop)
        out.reverse()
        return out

    def _lazily_guarded(self, site: CallSite) -> bool:
        """``if scaler is None: scaler = GradScaler()`` builds it once."""
        facts = self.facts
        for branch in site.ctx.branches:
            if isinstance(branch.node, cst.If):
                if _LAZY_GUARD.search(facts.code(branch.node.test)) or "scaler" in facts.code(branch.node.test).lower():
                    return True
        return False

    def _per_step(self, scope: Scope) -> bool:
        facts = self.facts
        function = facts.function_of(scope)
        if function is None or scope not in facts.per_step_functions:
            return False
        # A function that builds its own optimizer sets up a whole run.
        for assignment in facts.assignments:
            if assignment.ctx.scope is scope and isinstance(assignment.value, cst.Call):
                built = any(t in facts.optimizer_builds for t in assignment.targets)
                named = any(t in facts.optimizers for t in assignment.targets) and not (
                    S.dotted(assignment.value.func) or ""
                ).endswith("optimizers")
                if built or named:
                    return False
        if function.node.name.value in facts.PER_STEP_NAMES:
            return True
        # Called inside a training loop, but running its own training loop after building the
        # scaler: the caller's loop may be over runs (yolov5's `--evolve` generations) or epochs.
        if any(loop.scope is scope for loop in facts.training_loops):
            return False
        for site in facts.calls:
            if function not in facts.called_functions(site):
                continue
            loops = self._training_loops_around(site)
            if loops:
                return True
        return False

    # -- fixing
    def _hoist(self, site: CallSite, outer: Loop) -> Fix | NoFix:
        facts = self.facts
        stmt = site.ctx.stmt
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Assign):
            return NoFix("only a plain `scaler = GradScaler(...)` statement is moved automatically")
        assign = stmt.body[0]
        if assign.value is not site.node or len(assign.targets) != 1:
            return NoFix("only a plain `scaler = GradScaler(...)` statement is moved automatically")
        target = facts.code(assign.targets[0].target).strip()
        for branch in site.ctx.branches:
            if facts.contains(outer.node, branch.node) and not (isinstance(branch.node, cst.Try) and branch.part == "body"):
                return NoFix("the scaler is built under a condition inside the loop")
        bound = facts.names_bound_in_loop(outer) - {target}
        for ref in facts.references:
            if ref.ctx.stmt is stmt and facts.contains(site.node, ref.node) and ref.node is not site.node.func:
                if facts.contains(site.node.func, ref.node):
                    continue
                parts = ref.parts
                if any(".".join(parts[: i + 1]) in bound for i in range(len(parts))):
                    return NoFix(f"its arguments use `{facts.code(ref.node)}`, which the loop changes")
        others = [
            a for a in facts.assignments_to(target, site.ctx.scope)
            if a.node is not assign and a.ctx.scope is site.ctx.scope and outer in a.ctx.loops
        ]
        if others:
            return NoFix(f"`{target}` is assigned again inside the loop")
        located = facts.statement_block(stmt)
        if located is None or len(located[1]) < 2:
            return NoFix("the statement is alone in its block")
        if facts.statement_block(outer.node) is None:
            return NoFix("the loop is not a statement of a block")
        new_loop = E.replace_within(outer.node, {stmt: cst.RemovalSentinel.REMOVE})
        return Fix.safe("Build the GradScaler once, before the training loop", {outer.node: cst.FlattenSentinel([stmt, new_loop])})
