from __future__ import annotations

from dataclasses import dataclass, field
from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.amp import Event, EventKind
import amplint.scaler_protocol as P
from amplint.fix import Fix, NoFix
import amplint.fix.edits as E
from amplint.model import FixSafety
from amplint.rules.base import Invalid, Rule, Violation

K = EventKind
_UNSCALED_BACKWARDS = (K.BACKWARD, K.AUTOGRAD_BACKWARD)


@dataclass
class _Clip:
    event: Event
    step: Event
    optimizers: list[str] | None  # None: cannot tell which optimizer's parameters are clipped
    after_unscaled_too: bool = False  # another path reaches the clip through a plain backward


@dataclass
class _StepPlan:
    step: Event
    clips: list[_Clip] = field(default_factory=list)


class ClipBeforeUnscale(Rule):
    """
    ## What it does
    Finds gradient clipping (`torch.nn.utils.clip_grad_norm_`, `clip_grad_value_`, timm's
    `dispatch_clip_grad`, FSDP's `model.clip_grad_norm_`) after a scaled backward
    (`scaler.scale(loss).backward()`) and before that scaler's `step`, with no
    `scaler.unscale_(optimizer)` of the clipped optimizer between them on that path. A call of a
    same-file helper that only clips (`self._clip_gradients(max_norm)`) is a clip. A clip after
    `if fp16: scaler.scale(loss).backward() else: loss.backward()` counts: on the fp16 path it
    sees scaled gradients (reported without a fix, since an unconditional `unscale_` would be wrong
    on the other path).

    ## Why is this bad?
    Until `unscale_` (or `step`) runs, every gradient is multiplied by the loss scale (65536 at the
    start). Clipping them clips the true gradient at `max_norm / scale`: the optimizer sees a
    gradient norm around 1e-5 and the loss barely moves. `scaler.step` unscales afterwards, so
    nothing fails loudly. The AMP examples unscale first ("Working with unscaled gradients").

    Which backward a clip follows is read from the control flow: a backward whose iteration ends
    (`continue`, `return`) before the clip does not count, and two `if` statements on the same
    unchanged test (`if use_amp:` before the backward and again before the step) are taken the
    same way, so a clip on the fp32 path only is not reported.

    Not reported: helpers that unscale before clipping (timm's / MAE's `NativeScaler`), clipping
    under `if clip_grad is not None:` after an `unscale_`, a scaler built with
    `enabled=False`, code without a GradScaler, `accelerator.clip_grad_norm_` (accelerate
    unscales itself) and Lightning's `self.clip_gradients`.

    ## Example
    ```python
    import torch

    def train_step(model, optimizer, scaler, loss):
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Use instead
    ```python
    import torch

    def train_step(model, optimizer, scaler, loss):
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Fix safety
    The fix is safe: it inserts `scaler.unscale_(optimizer)` right before the clip, spelled with
    the scaler and optimizer names the code uses (`self.scaler`, `opt`); `scaler.step` then does
    not unscale a second time. With several optimizers it inserts one `unscale_` per optimizer
    whose parameters are clipped (matched through `torch.optim.X(model.parameters())`). No fix is
    offered when the optimizer cannot be determined, when the clip runs more often than the step
    (every micro-batch of an accumulation loop, where a second `unscale_` before `update()` raises),
    when the step is conditional and the clip is not, when a plain `loss.backward()` on another path
    reaches the clip too (the `else:` of `if use_amp:`, where `unscale_` would be wrong), when an
    `unscale_` already runs between the clip and the step (a second one raises: move that one
    before the clip), when the clip and the step sit in different loops, and when the clip is not a
    statement of its own.

    ## References
    - [Automatic Mixed Precision examples: gradient clipping](https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping)
    - [torch.amp.GradScaler.unscale_](https://pytorch.org/docs/stable/amp.html#torch.amp.GradScaler.unscale_)
    - [AMP recipe: inspecting/modifying gradients](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    """

    code = "AMP003"
    name = "clip-before-unscale"
    summary = "Gradients clipped while still scaled by the GradScaler"
    fix_safety = FixSafety.SAFE
    fix_withheld = (
        "when the clipped optimizer is unclear, a plain `backward()` on another path reaches the clip, "
        "an `unscale_` follows the clip, or the step is conditional and the clip is not"
    )
    # Literal substrings for the prefilter: clipping before unscale_ needs a scaled backward in the file.
    triggers = (".scale(",)

    valid = (
        dedent("""\
        import torch
        scaler = torch.amp.GradScaler('cuda')
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        """),
        dedent("""\
        import torch
        scaler = torch.amp.GradScaler('cuda', enabled=False)
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        """),
        dedent("""\
        import torch
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        """),
        dedent("""\
        accelerator.backward(loss)
        accelerator.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        """),
        # The clip runs only on the fp32 path: the same `use_amp` test chooses the step.
        dedent("""\
        import torch

        def train(model, loader, optimizer, scaler, use_amp, max_norm):
            for batch in loader:
                loss = model(batch)
                if use_amp:
                    scaler.scale(loss).backward()
                else:
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
                if use_amp:
                    scaler.step(optimizer)
                    scaler.update()
                else:
                    optimizer.step()
                optimizer.zero_grad()
        """),
    )
    invalid = (
        # The plain backward before the clip ends its iteration with `continue`: the clip only
        # ever follows the scaled one.
        Invalid(
            dedent("""\
            import torch

            def train(model, loader, optimizer, scaler, max_norm):
                for batch in loader:
                    loss = model(batch)
                    scaler.scale(loss).backward()
                    if loss.item() > 100:
                        model.aux_loss(batch).backward()
                        continue
                    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
                    scaler.step(optimizer)
                    scaler.update()
            """),
            fixed=dedent("""\
            import torch

            def train(model, loader, optimizer, scaler, max_norm):
                for batch in loader:
                    loss = model(batch)
                    scaler.scale(loss).backward()
                    if loss.item() > 100:
                        model.aux_loss(batch).backward()
                        continue
                    scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
                    scaler.step(optimizer)
                    scaler.update()
            """),
        ),
        Invalid(
            dedent("""\
            import torch
            scaler = torch.amp.GradScaler('cuda')
            scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            """),
            fixed=dedent("""\
            import torch
            scaler = torch.amp.GradScaler('cuda')
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            """),
        ),
        Invalid(
            dedent("""\
            from torch.nn.utils import clip_grad_value_

            class T:
                def step(self, loss):
                    self.scaler.scale(loss).backward()
                    clip_grad_value_(self.model.parameters(), 0.5)
                    self.scaler.step(self.optimizer)
                    self.scaler.update()
            """),
            fixed=dedent("""\
            from torch.nn.utils import clip_grad_value_

            class T:
                def step(self, loss):
                    self.scaler.scale(loss).backward()
                    self.scaler.unscale_(self.optimizer)
                    clip_grad_value_(self.model.parameters(), 0.5)
                    self.scaler.step(self.optimizer)
                    self.scaler.update()
            """),
        ),
        Invalid(
            dedent("""\
            import torch
            for i, (x, y) in enumerate(loader):
                scaler.scale(model(x, y)).backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                if (i + 1) % 4 == 0:
                    scaler.step(opt)
                    scaler.update()
            """),
        ),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        plans: dict[Event, _StepPlan] = {}
        found: list[_Clip] = []
        direct = [event for event in facts.timeline.events if event.kind is K.CLIP]
        for event in facts.in_walk_order([*direct, *facts.timeline.clip_helper_calls]):
            clip = self._examine(event, facts.timeline.events_by_scope.get(event.ctx.scope, []))
            if clip is not None:
                found.append(clip)
                plans.setdefault(clip.step, _StepPlan(clip.step)).clips.append(clip)
        for clip in found:
            yield self.violation(
                clip.event.call,
                "Gradients are clipped while still multiplied by the loss scale"
                + (" on the path that scales the backward" if clip.after_unscaled_too else "")
                + f": call `{clip.step.scaler}.unscale_(...)` "
                f"before clipping (the scaler steps on line {facts.position(clip.step.call).start.line})",
                fix=self._fix(plans[clip.step], clip),
            )

    # -- deciding
    def _examine(self, clip: Event, events: list[Event]) -> _Clip | None:
        """A clip the GradScaler protocol runs while the gradients it touches still carry the
        scale, on some path to the scaler's next ``step``."""
        facts = self.facts
        step = facts.iterations.next_scaler_step_in_function(clip)
        if step is None or step.scaler is None:
            return None
        if not facts.scaling.is_scaler(step.scaler) or facts.scaling.scaler_provably_disabled(step.scaler, step.ctx.scope):
            return None
        optimizers = self._clipped_optimizers(clip, step)
        states = [state for run, state in facts.protocol.states_before(clip) if step.scaler in run.names]
        if states and all(all(t.grads is None for t in state.values()) for state in states):
            return self._scaled_elsewhere(clip, step, events, optimizers)
        scaled = [state for state in states if self._clips_scaled(state, optimizers)]
        if not scaled:
            return None
        plain = any(any(t.grads is P.Grads.TRUE and t.stage is P.Stage.READY for t in state.values()) for state in states)
        return _Clip(clip, step, optimizers, after_unscaled_too=plain)

    @staticmethod
    def _clips_scaled(state: dict, optimizers: list[str] | None) -> bool:
        """On this path the clip touches gradients still multiplied by the scale: an optimizer it
        clips is READY with scaled gradients, and none it may clip was unscaled."""
        relevant = [state[o] for o in (optimizers if optimizers is not None else state) if o in state]
        if not relevant or any(t.stage is P.Stage.UNSCALED for t in relevant):
            return False
        return any(t.stage is P.Stage.READY and t.grads is P.Grads.SCALED for t in relevant)

    def _scaled_elsewhere(self, clip: Event, step: Event, events: list[Event], optimizers: list[str] | None) -> _Clip | None:
        """No backward runs before the clip in this function (the backward is another method's,
        ``optimizer_step`` of a trainer class): the gradients are taken to be scaled when nothing
        in this file unscales this scaler and no scaled backward runs between the clip and the step."""
        facts = self.facts
        if facts.iterations.events_of(None, K.UNSCALE, step.scaler):
            return None
        if any(e.kind is K.SCALE_BACKWARD and facts.control_flow.between(clip.ctx, e.ctx, step.ctx) for e in events):
            return None
        if any(e.kind in (K.SCALE_BACKWARD, *_UNSCALED_BACKWARDS) and facts.control_flow.reaches(e.ctx, clip.ctx) for e in events):
            return None
        if facts.iterations.may_unscale_between(None, clip.ctx):
            return None
        return _Clip(clip, step, optimizers)

    def _clipped_optimizers(self, clip: Event, step: Event) -> list[str] | None:
        """Optimizers whose parameters the clip touches, in step order; ``None`` when unknown."""
        stepped = self.facts.iterations.stepped_optimizers(step)
        if stepped is None or len(stepped) <= 1:
            return stepped or None
        owner = self.facts.optim.clip_parameter_owner(clip.call)
        return self.facts.iterations.optimizers_owning(owner, stepped, clip.ctx.scope) or None

    # -- fixing
    def _insert_point(self, clip: _Clip) -> cst.CSTNode | NoFix:
        """The statement to insert ``unscale_`` before: the clip's, or the loop it is nested in."""
        facts = self.facts
        event, step = clip.event, clip.step
        if clip.after_unscaled_too:
            return NoFix(
                "the clip also follows a plain `loss.backward()` on the other path, where `unscale_` would be wrong: "
                "unscale_ under the same condition as the scaled backward"
            )
        if clip.optimizers is None:
            return NoFix("cannot tell which optimizer's gradients are clipped")
        if any(e.kind is K.UNSCALE and e.scaler == step.scaler and (e.optimizer is None or e.optimizer in clip.optimizers)
               and facts.control_flow.between(event.ctx, e.ctx, step.ctx) for e in facts.timeline.events_by_scope.get(event.ctx.scope, [])):
            # a second ``unscale_`` before ``update()`` raises: the one after the clip has to move instead
            return NoFix(f"`{step.scaler}.unscale_(...)` runs after the clip: move it before the clip")
        step_branches = set(step.ctx.branches)
        if not step_branches <= set(event.ctx.branches):
            return NoFix(
                "the step is conditional but the clip is not (gradient accumulation?): move the clip under the "
                "step's condition and unscale_ before it"
            )
        if tuple(event.ctx.loops[: len(step.ctx.loops)]) != tuple(step.ctx.loops):
            return NoFix("the clip and the step are in different loops")
        target: cst.CSTNode | None = event.ctx.stmt
        extra = event.ctx.loops[len(step.ctx.loops):]
        if extra:
            target = extra[0].node
        if not isinstance(target, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return NoFix("the clip is not a statement of its own")
        located = facts.tree.statement_block(target)
        if located is None or not isinstance(located[0], (cst.IndentedBlock, cst.Module)):
            return NoFix("the clip is not a statement of its own")
        return target

    def _fix(self, plan: _StepPlan, clip: _Clip) -> Fix | NoFix:
        own = self._insert_point(clip)
        if isinstance(own, NoFix):
            return own
        inserts: dict[cst.CSTNode, list[str]] = {}
        seen: set[str] = set()
        for other in self.facts.in_walk_order(plan.clips, place=lambda c: c.event.ctx):
            point = self._insert_point(other)
            if isinstance(point, NoFix):
                continue
            for optimizer in other.optimizers or ():
                if optimizer not in seen:
                    seen.add(optimizer)
                    inserts.setdefault(point, []).append(optimizer)
        scaler = plan.step.scaler
        changes = {
            point: E.insert_before(point, [cst.parse_statement(f"{scaler}.unscale_({o})\n") for o in optimizers])
            for point, optimizers in inserts.items()
        }
        names = ", ".join(f"`{scaler}.unscale_({o})`" for optimizers in inserts.values() for o in optimizers)
        position = self.facts.position(plan.step.call).start
        return Fix.safe(f"Insert {names} before clipping", changes, group=f"{self.code}:{position.line}:{position.column}")
