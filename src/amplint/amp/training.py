"""Training loops and the functions that run a step: found from events and the call graph."""

from __future__ import annotations

import re
from functools import cached_property

import libcst as cst

import amplint.amp.catalogue as API
from amplint.amp.events import BACKWARD_KINDS, SCALER_KINDS, TRAINING_KINDS, EventKind
import amplint.semantic.syntax as S
from amplint.semantic.records import Branch, Context, Loop, Scope

# Loop variables / iterables of loops over independent runs (k-fold CV, sweeps, seeds).
_EPOCH_WORDS = re.compile(r"epoch", re.IGNORECASE)
_RUN_WORDS = re.compile(
    r"(^|_)(folds?|seeds?|trials?|runs?|repeats?|repetitions?|experiments?|exps?|configs?|cfgs?|hparams?|params_grid|"
    r"grid|sweeps?|splits?|lrs?|learning_rates?|settings?|tasks?|kfold|cv|replicates?|evolve|generations?)(_|$|\d)",
    re.IGNORECASE,
)


class TrainingFacts:
    """The ``facts.training`` service of :class:`~amplint.amp.facts.FileFacts`."""

    def __init__(self, facts: "FileFacts") -> None:
        self.facts = facts

    PER_STEP_NAMES = API.PER_STEP_NAMES

    def _scopes_with(self, kinds: tuple[EventKind, ...]) -> set[Scope]:
        return {e.ctx.scope for e in self.facts.timeline.events if e.kind in kinds}

    @cached_property
    def training_functions(self) -> set[Scope]:
        """Function scopes that (transitively, within this file) run a backward or an optimizer step."""
        return self.facts.callgraph.callers_closure(self._scopes_with(TRAINING_KINDS))

    @cached_property
    def backward_functions(self) -> set[Scope]:
        """Function scopes that (transitively, within this file) run a backward."""
        return self.facts.callgraph.callers_closure(self._scopes_with(BACKWARD_KINDS))

    @cached_property
    def updating_functions(self) -> set[Scope]:
        """Function scopes that (transitively, within this file) call ``scaler.update()``."""
        return self.facts.callgraph.callers_closure(self._scopes_with((EventKind.UPDATE,)))

    def _loops_running(self, kinds: tuple[EventKind, ...], functions: set[Scope]) -> set[Loop]:
        """Loops whose body has an event of ``kinds`` or calls one of ``functions``."""
        out: set[Loop] = set()
        for event in self.facts.timeline.events:
            if event.kind in kinds:
                out.update(event.ctx.loops)
        for site in self.facts.calls:
            if site.ctx.loops and self.facts.callgraph.calls_into(site, functions):
                out.update(site.ctx.loops)
        return out

    @cached_property
    def training_loops(self) -> set[Loop]:
        """Loops whose body runs a backward or a step (directly or through a same-file function)."""
        return self._loops_running(TRAINING_KINDS, self.training_functions)

    @cached_property
    def backward_loops(self) -> set[Loop]:
        """Loops whose body runs a backward (directly or through a same-file function)."""
        return self._loops_running(BACKWARD_KINDS, self.backward_functions)

    @cached_property
    def per_step_functions(self) -> set[Scope]:
        """Functions that run once per step or epoch: called inside a training loop here (not a
        loop over runs), or named for one pass (``fit_one_epoch``, ``train_on_batch``); never one
        that is a whole run itself (:meth:`runs_whole_training`)."""
        out = {function.scope for function in self.facts.functions if API.names_one_pass(function.node.name.value)}
        for site in self.facts.calls:
            if self.training_loops_within_run(site.ctx):
                out.update(function.scope for function in self.facts.callgraph.called_functions(site))
        return {scope for scope in out if not self.runs_whole_training(scope)}

    def runs_whole_training(self, scope: Scope) -> bool:
        """The function is a whole run: it builds its optimizer, or loops over epochs around a
        loop over batches (yolov5's ``train()``, called once per ``--evolve`` generation)."""
        if self.builds_own_optimizer(scope):
            return True
        own = [loop for loop in self.training_loops if loop.scope is scope]
        return any(
            inner is not outer and self.facts.tree.contains(outer.node, inner.node) and self.is_epoch_loop(outer)
            for inner in own for outer in own
        )

    def is_epoch_loop(self, loop: Loop) -> bool:
        """``for epoch in range(...)``, ``for _ in trange(n)``, ``while epoch < n``: not a loop over
        data, micro-batches or retries."""
        node = loop.node
        if isinstance(node, cst.For):
            header = self.facts.code(node.target) + " " + self.facts.code(node.iter)
            return bool(_EPOCH_WORDS.search(header)) or re.match(r"\s*(t?range)\(", self.facts.code(node.iter)) is not None
        return bool(_EPOCH_WORDS.search(self.facts.code(node.test)))

    def outermost_training_loop(self, ctx: Context) -> Loop | None:
        """The outermost loop around ``ctx`` (same function) that runs training iterations."""
        for loop in ctx.loops:
            if loop in self.training_loops:
                return loop
        return None

    def iteration_loop(self, ctx: Context) -> Loop | None:
        """The innermost loop around ``ctx`` that runs a backward: one pass of it is one training
        iteration (a ``for opt in optimizers`` loop inside it is not)."""
        for loop in reversed(ctx.loops):
            if loop in self.backward_loops:
                return loop
        return None

    def names_bound_in_loop(self, loop: Loop) -> set[str]:
        """Dotted names (re)bound in each iteration of ``loop``: loop targets and assignments in its body."""
        out: set[str] = set(loop.target_names)
        for inner in self.facts.loops:
            if inner.scope is loop.scope and self.facts.tree.contains(loop.node, inner.node):
                out |= inner.target_names
        for assignment in self.facts.assignments_in(loop.scope):
            if loop in assignment.ctx.loops:
                out.update(target.replace("[...]", "") for target in assignment.targets)
        return out

    # -- runs: loops and functions that set up a whole training run
    def is_run_loop(self, loop: Loop) -> bool:
        """A loop over independent runs (folds, seeds, trials, a sweep): its header says so, or
        each pass builds a fresh optimizer."""
        node = loop.node
        header = self.facts.code(node.target) + " " + self.facts.code(node.iter) if isinstance(node, cst.For) else self.facts.code(node.test)
        if _RUN_WORDS.search(header):
            return True
        return any(
            assignment.ctx.loops and assignment.ctx.loops[-1] is loop
            and isinstance(assignment.value, cst.Call)
            and any(t in self.facts.optim.optimizer_builds or t in self.facts.optim.optimizers for t in assignment.targets)
            for assignment in self.facts.assignments_in(loop.scope)
        )

    def training_loops_within_run(self, ctx: Context) -> list[Loop] | None:
        """The training loops around ``ctx``, outermost first, up to the innermost loop over runs;
        ``None`` when the innermost enclosing loop is itself a loop over runs."""
        out: list[Loop] = []
        for loop in reversed(ctx.loops):
            if self.is_run_loop(loop):
                if not out:
                    return None
                break
            if loop not in self.training_loops:
                break
            out.append(loop)
        out.reverse()
        return out

    def builds_own_optimizer(self, scope: Scope) -> bool:
        """The function builds an optimizer (``opt = AdamW(...)``, ``self.optimizer = make(...)``),
        so it sets up a whole run; ``self.optimizers()`` (Lightning) only fetches them."""
        for assignment in self.facts.assignments:
            if assignment.ctx.scope is scope and isinstance(assignment.value, cst.Call):
                built = any(t in self.facts.optim.optimizer_builds for t in assignment.targets)
                named = any(t in self.facts.optim.optimizers for t in assignment.targets) and not (
                    S.dotted(assignment.value.func) or ""
                ).endswith("optimizers")
                if built or named:
                    return True
        return False

    # -- the branches of a step: AMP gates and accumulation boundaries
    def mentions_amp(self, expr: cst.CSTNode) -> bool:
        """The expression names something AMP-ish (``use_amp``, ``self.scaler``, ``args.fp16`` ...)."""
        for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", self.facts.code(expr)):
            lowered = word.lower()
            if lowered in API.AMP_WORDS or any(part in API.AMP_WORDS for part in lowered.split("_")):
                return True
        return False

    def amp_gate(self, ctx: Context, other: Context | None = None) -> Branch | None:
        """An ``if`` branch around ``ctx`` that selects the AMP or the non-AMP path (its test
        mentions AMP, or the other part of the ``if`` scales or steps through a scaler), and that
        does not also enclose ``other``."""
        inside_other = set(other.branches) if other is not None else set()
        for branch in ctx.branches:
            if not isinstance(branch.node, cst.If) or branch in inside_other:
                continue
            if self.mentions_amp(branch.node.test):
                return branch
            for event in self.facts.timeline.events_by_scope.get(ctx.scope, []):
                if event.kind in SCALER_KINDS and any(
                    eb.node is branch.node and eb.part != branch.part for eb in event.ctx.branches
                ):
                    return branch
        return None

    def is_accumulation_test(self, test: cst.BaseExpression) -> bool:
        """``(i + 1) % accum == 0`` / ``step % grad_accum_steps == 0`` / ``accelerator.sync_gradients``."""
        text = self.facts.code(test)
        if "%" in text and not re.search(r"['\"]", text):
            return True
        lowered = text.lower()
        return "accum" in lowered or "sync_grad" in lowered or "update_freq" in lowered

    def accumulation_branch(self, ctx: Context) -> Branch | None:
        """The innermost ``if`` body around ``ctx`` whose test is an accumulation boundary."""
        for branch in reversed(ctx.branches):
            if isinstance(branch.node, cst.If) and branch.part == "body" and self.is_accumulation_test(branch.node.test):
                return branch
        return None
