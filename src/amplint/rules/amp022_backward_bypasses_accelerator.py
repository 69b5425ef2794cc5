from __future__ import annotations

from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.amp.events import Event, EventKind
from amplint.amp.frameworks import AcceleratorBuild
from amplint.fix import Fix, NoFix
import amplint.fix.edits as E
from amplint.model import FixSafety
from amplint.rules.base import Invalid, Rule, Violation
from amplint.semantic.records import Assignment
import amplint.semantic.syntax as S

# ``accelerator.prepare(model, optimizer, ...)`` returns the prepared objects in order
# (accelerator.py:1375); ``prepare_optimizer`` wraps one optimizer (accelerator.py:2653).
_PREPARING = ("prepare", "prepare_optimizer")


class BackwardBypassesAccelerator(Rule):
    """
    ## What it does
    Finds `loss.backward()` followed, in the same function, by `optimizer.step()` on an optimizer
    that `accelerator.prepare(...)` returned, where `accelerator` is an `accelerate.Accelerator`
    built in this file that may run in fp16 mixed precision. The precision is decided from the
    `Accelerator(...)` call as AMP019 decides it: a literal `"fp16"`, a choice or computed value
    that may be `"fp16"`, or no `mixed_precision` (the launcher's setting) are reported; `"no"`,
    `"bf16"`, `cpu=True` and a DeepSpeed or Megatron-LM plugin are not.

    The rule stays silent where the plain backward is a deliberate alternative: when the same
    function also calls `accelerator.backward(...)`, or the backward sits under a condition that
    tests the Accelerator (`if accelerator is None:`).

    ## Why is this bad?
    With fp16, Accelerate scales the loss in `accelerator.backward` (`self.scaler.scale(loss)
    .backward()`, accelerate `accelerator.py:2762-2763`), and the prepared optimizer's `step()`
    calls `scaler.step(optimizer)` and `scaler.update()` (`optimizer.py:169-173`). After a plain
    `loss.backward()` that scaler has scaled nothing, and the first step raises
    `AssertionError: Attempted step but _scale is None. This may indicate your script did not use
    scaler.scale(loss or outputs) earlier in the iteration.` (torch `amp/grad_scaler.py`). Where
    some other backward did scale once, every later step divides true gradients by the loss scale
    (65536 at the start), so updates are that much too small and nothing fails. Small fp16
    gradients also underflow to zero without the scale. `accelerator.backward` also divides the
    loss by `gradient_accumulation_steps` (`accelerator.py:2757`) and runs DeepSpeed's backward,
    which `loss.backward()` skips as well.

    ## Example
    ```python
    from accelerate import Accelerator

    accelerator = Accelerator(mixed_precision="fp16")
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    ```

    ## Use instead
    ```python
    from accelerate import Accelerator

    accelerator = Accelerator(mixed_precision="fp16")
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
    ```

    ## Fix safety
    The fix rewrites `loss.backward(**kwargs)` to `accelerator.backward(loss, **kwargs)` on the
    Accelerator that prepared the optimizer (Accelerate passes the keywords on to the tensor's
    `backward`). It is always unsafe: `accelerator.backward` also divides the loss by the
    gradient accumulation steps, which `ACCELERATE_GRADIENT_ACCUMULATION_STEPS` can set from
    outside the file (`accelerator.py:517-518`), so a loss the script already divides would be
    divided twice. There is no fix when the backward passes positional arguments, or when the
    Accelerator's variable is not in reach where the backward runs.

    ## References
    - [Accelerate: the training loop](https://huggingface.co/docs/accelerate/basic_tutorials/migration)
    - [Accelerator.backward](https://huggingface.co/docs/accelerate/package_reference/accelerator#accelerate.Accelerator.backward)
    - accelerate 1.16.0 `src/accelerate/accelerator.py`: `backward` 2735-2767 (the scaled backward
      at 2762-2763, the accumulation division at 2757), the GradScaler built for fp16 only
      534-555; `src/accelerate/optimizer.py:169-173` (`scaler.step` + `scaler.update` in `step`)
    """

    code = "AMP022"
    name = "backward-bypasses-accelerator"
    summary = "`loss.backward()` on a loss whose prepared optimizer Accelerate steps through its fp16 GradScaler"
    fix_safety = FixSafety.UNSAFE
    fix_withheld = "when the backward passes positional arguments, or the Accelerator is not in reach where it runs"
    triggers = ("Accelerator",)
    requires = ("backward",)

    valid = (
        dedent("""\
        from accelerate import Accelerator
        accelerator = Accelerator(mixed_precision="fp16")
        model, optimizer = accelerator.prepare(model, optimizer)
        accelerator.backward(loss)
        optimizer.step()
        """),
        # bf16 builds no GradScaler: nothing divides the gradients.
        dedent("""\
        from accelerate import Accelerator
        accelerator = Accelerator(mixed_precision="bf16")
        model, optimizer = accelerator.prepare(model, optimizer)
        loss.backward()
        optimizer.step()
        """),
        # The optimizer stepped is not the prepared one.
        dedent("""\
        from accelerate import Accelerator
        accelerator = Accelerator(mixed_precision="fp16")
        model = accelerator.prepare(model)
        loss.backward()
        optimizer.step()
        """),
        # A script that runs with or without Accelerate.
        dedent("""\
        from accelerate import Accelerator

        def train(model, optimizer, loader, use_accelerate):
            accelerator = Accelerator(mixed_precision="fp16") if use_accelerate else None
            if accelerator is not None:
                model, optimizer = accelerator.prepare(model, optimizer)
            for batch in loader:
                loss = model(batch)
                if accelerator is not None:
                    accelerator.backward(loss)
                else:
                    loss.backward()
                optimizer.step()
        """),
    )
    invalid = (
        Invalid(
            dedent("""\
            from accelerate import Accelerator
            accelerator = Accelerator(mixed_precision="fp16")
            model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
            for batch in loader:
                loss = model(**batch).loss
                loss.backward()
                optimizer.step()
            """),
            fixed=dedent("""\
            from accelerate import Accelerator
            accelerator = Accelerator(mixed_precision="fp16")
            model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
            for batch in loader:
                loss = model(**batch).loss
                accelerator.backward(loss)
                optimizer.step()
            """),
            unsafe=True,
        ),
        Invalid(
            dedent("""\
            from accelerate import Accelerator

            class Trainer:
                def __init__(self, args, model, optimizer):
                    self.accelerator = Accelerator(mixed_precision=args.mixed_precision)
                    self.model, self.optimizer = self.accelerator.prepare(model, optimizer)

                def train_step(self, batch):
                    loss = self.model(batch).mean()
                    (loss / 2).backward(retain_graph=True)
                    self.optimizer.step()
            """),
            fixed=dedent("""\
            from accelerate import Accelerator

            class Trainer:
                def __init__(self, args, model, optimizer):
                    self.accelerator = Accelerator(mixed_precision=args.mixed_precision)
                    self.model, self.optimizer = self.accelerator.prepare(model, optimizer)

                def train_step(self, batch):
                    loss = self.model(batch).mean()
                    self.accelerator.backward(loss / 2, retain_graph=True)
                    self.optimizer.step()
            """),
            unsafe=True,
        ),
        # A positional argument (the gradient): where it goes on `accelerator.backward` is not for the fix to guess.
        dedent("""\
            from accelerate import Accelerator
            accelerator = Accelerator(mixed_precision="fp16")
            model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
            for batch in loader:
                loss = model(**batch).loss
                loss.backward(torch.ones_like(loss))
                optimizer.step()
        """),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        backwards = [e for e in facts.timeline.events if e.kind is EventKind.BACKWARD]
        if not backwards:
            return
        prepares = self._fp16_prepares()
        if not prepares:
            return
        accelerated = facts.frameworks.accelerator_method_calls("backward")
        for backward in backwards:
            found = self._prepared_step_after(backward, prepares)
            if found is None:
                continue
            accelerator, build = found
            if any(site.ctx.scope is backward.ctx.scope and text == accelerator for site, text in accelerated):
                continue  # both spellings in one function: the plain one is a chosen alternative
            root = accelerator.split(".")[-1]
            if any(isinstance(b.node, cst.If) and root in facts.code(b.node.test) for b in backward.ctx.branches):
                continue
            yield self.violation(backward.call, self._message(backward, accelerator, build), fix=self._fix(backward, accelerator))

    # -- deciding
    def _fp16_prepares(self) -> list[tuple[Assignment, str, AcceleratorBuild]]:
        """``... = accelerator.prepare(...)`` assignments of an Accelerator that may scale in fp16."""
        facts = self.facts
        out = []
        for assignment in facts.assignments:
            value = assignment.value
            if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in _PREPARING):
                continue
            accelerator = S.dotted(value.func.value)
            if accelerator is None:
                continue
            builds = [b for b in facts.frameworks.accelerator_builds_of(accelerator, assignment.ctx) if b.may_be_fp16]
            if builds:
                out.append((assignment, accelerator, builds[0]))
        return out

    def _prepared_step_after(self, backward: Event, prepares) -> tuple[str, AcceleratorBuild] | None:
        """The Accelerator that prepared an optimizer stepped after ``backward`` in its function."""
        flow = self.facts.control_flow
        for step in self.facts.frameworks.optimizer_steps_in(backward.ctx):
            if not flow.reaches(backward.ctx, step.ctx):
                continue
            for assignment, accelerator, build in prepares:
                if step.optimizer in assignment.targets and self._holds_prepared(step, assignment):
                    return accelerator, build
        return None

    def _holds_prepared(self, step: Event, prepare: Assignment) -> bool:
        """The optimizer ``step`` runs is the one ``prepare`` bound: in one function, no other
        assignment between them; across functions, every other assignment of the variable is
        followed by a prepare in its own function (the optimizer built, then wrapped)."""
        facts, flow, name = self.facts, self.facts.control_flow, step.optimizer
        variable = facts.identity.variable(name, step.ctx.scope)
        if variable is None or facts.identity.variable(name, prepare.ctx.scope) != variable:
            return False
        others = [a for a in facts.assignments_to(name) if a is not prepare and facts.identity.variable(name, a.ctx.scope) == variable]
        if prepare.ctx.scope is step.ctx.scope:
            return flow.reaches_avoiding(prepare.ctx, step.ctx, [a.ctx for a in others])
        return all(a.ctx.scope is prepare.ctx.scope and flow.reaches(a.ctx, prepare.ctx) for a in others)

    def _message(self, backward: Event, accelerator: str, build: AcceleratorBuild) -> str:
        line = self.facts.position(build.site.node).start.line
        loss = self.facts.code(backward.call.func.value)
        if build.source == "literal":
            when = f'With `mixed_precision="fp16"` (line {line})'
        elif build.source in ("expression", "choice") and build.expression is not None:
            when = f'When `{self.facts.code(build.expression)}` (line {line}) is "fp16"'
        else:
            when = f"When the `Accelerator` on line {line} runs in fp16"
        return (
            f"{when}, the prepared optimizer's `step()` runs Accelerate's GradScaler, but `{loss}.backward()` "
            "scales nothing: the first step raises `AssertionError: Attempted step but _scale is None` (and once "
            f"a scale exists, every update is divided by it); use `{accelerator}.backward({loss})`"
        )

    # -- fixing
    def _fix(self, backward: Event, accelerator: str) -> Fix | NoFix:
        facts, call = self.facts, backward.call
        if any(arg.keyword is None and arg.star != "**" for arg in call.args):
            return NoFix("the backward passes positional arguments: name them to move them onto `accelerator.backward`")
        root = accelerator.split(".")[0]
        holder = next((a for a, text, _ in self._fp16_prepares() if text == accelerator), None)
        if holder is None or facts.identity.variable(root, backward.ctx.scope) != facts.identity.variable(root, holder.ctx.scope):
            return NoFix(f"`{accelerator}` is not in reach where the backward runs")
        loss = cst.Arg(S.without_parens(call.func.value))
        args = [loss.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))] + list(call.args) \
            if call.args else [loss]
        new = call.with_changes(func=E.attribute_chain(E.dotted_expression(accelerator), "backward"), args=args)
        return Fix.unsafe(
            f"Use `{accelerator}.backward(...)` (it also divides the loss by the gradient accumulation steps)", {call: new}
        )
