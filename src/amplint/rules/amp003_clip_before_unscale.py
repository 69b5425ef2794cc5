from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import libcst as cst

from amplint.amp import Event, EventKind
from amplint.fix import edits as E
from amplint.fix import Fix, NoFix
from amplint.model import FixSafety
from amplint.rules.base import Invalid, Rule, Violation

_BACKWARDS = (EventKind.BACKWARD, EventKind.AUTOGRAD_BACKWARD)


def _branch_exclusive(a: Event, b: Event) -> bool:
    """``a`` and ``b`` sit in different arms of the same ``if``/``try``: never both on one path."""
    parts_a = {branch.node: branch.part for branch in a.ctx.branches}
    for branch in b.ctx.branches:
        part = parts_a.get(branch.node)
        if part is not None and part != branch.part and isinstance(branch.node, cst.If):
            return True
    return False


@dataclass
class _Clip:
    event: Event
    step: Event
    optimizers: list[str] | None  # None: cannot tell which optimizer's parameters are clipped
    reason: str | None = None
    insert_before: cst.CSTNode | None = None


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
    `scaler.unscale_(optimizer)` of the clipped optimizer between them on that path.

    ## Why is this bad?
    Until `unscale_` (or `step`) runs, every gradient is multiplied by the loss scale (65536 at the
    start). Clipping them clips the true gradient at `max_norm / scale`: the optimizer sees a
    gradient norm around 1e-5 and the loss barely moves. `scaler.step` unscales afterwards, so
    nothing fails loudly. The AMP examples unscale first ("Working with unscaled gradients").

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
    or when the step is conditional and the clip is not.

    ## References
    - [Automatic Mixed Precision examples: gradient clipping](https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping)
    - [torch.amp.GradScaler.unscale_](https://pytorch.org/docs/stable/amp.html#torch.amp.GradScaler.unscale_)
    - [AMP recipe: inspecting/modifying gradients](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    """

    code = "AMP003"
    name = "clip-before-unscale"
    summary = "Gradients clipped while still scaled by the GradScaler"
    fix_safety = FixSafety.SOMETIMES
    # Literal substrings for the prefilter: clipping before unscale_ needs a scaled backward in the file.
    triggers = (".scale(",)

    valid = (
        "import torch\nscaler = torch.amp.GradScaler('cuda')\nscaler.scale(loss).backward()\nscaler.unscale_(opt)\n"
        "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\nscaler.step(opt)\nscaler.update()\n",
        "import torch\nscaler = torch.amp.GradScaler('cuda', enabled=False)\nscaler.scale(loss).backward()\n"
        "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\nscaler.step(opt)\nscaler.update()\n",
        "import torch\nloss.backward()\ntorch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\noptimizer.step()\n",
        "accelerator.backward(loss)\naccelerator.clip_grad_norm_(model.parameters(), 1.0)\noptimizer.step()\n",
    )
    invalid = (
        Invalid(
            "import torch\nscaler = torch.amp.GradScaler('cuda')\nscaler.scale(loss).backward()\n"
            "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\nscaler.step(opt)\nscaler.update()\n",
            fixed="import torch\nscaler = torch.amp.GradScaler('cuda')\nscaler.scale(loss).backward()\nscaler.unscale_(opt)\n"
            "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\nscaler.step(opt)\nscaler.update()\n",
        ),
        Invalid(
            "from torch.nn.utils import clip_grad_value_\n\nclass T:\n    def step(self, loss):\n"
            "        self.scaler.scale(loss).backward()\n        clip_grad_value_(self.model.parameters(), 0.5)\n"
            "        self.scaler.step(self.optimizer)\n        self.scaler.update()\n",
            fixed="from torch.nn.utils import clip_grad_value_\n\nclass T:\n    def step(self, loss):\n"
            "        self.scaler.scale(loss).backward()\n        self.scaler.unscale_(self.optimizer)\n"
            "        clip_grad_value_(self.model.parameters(), 0.5)\n"
            "        self.scaler.step(self.optimizer)\n        self.scaler.update()\n",
        ),
        Invalid(
            "import torch\nfor i, (x, y) in enumerate(loader):\n    scaler.scale(model(x, y)).backward()\n"
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    if (i + 1) % 4 == 0:\n"
            "        scaler.step(opt)\n        scaler.update()\n",
        ),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        plans: dict[Event, _StepPlan] = {}
        found: list[_Clip] = []
        for scope, events in facts.events_by_scope.items():
            for index, event in enumerate(events):
                if event.kind != EventKind.CLIP:
                    continue
                clip = self._examine(event, events, index)
                if clip is None:
                    continue
                found.append(clip)
                plans.setdefault(clip.step, _StepPlan(clip.step)).clips.append(clip)
        for clip in found:
            fix = self._fix(plans[clip.step], clip)
            scaler = clip.step.scaler
            yield self.violation(
                clip.event.call,
                f"Gradients are clipped while still multiplied by the loss scale: call `{scaler}.unscale_(...)` "
                f"before clipping (the scaler steps on line {facts.position(clip.step.call).start.line})",
                fix=fix,
            )

    # -- deciding
    def _examine(self, clip: Event, events: list[Event], index: int) -> _Clip | None:
        facts = self.facts
        step = next((e for e in events[index + 1:] if e.kind == EventKind.SCALER_STEP), None)
        if step is None or step.scaler is None:
            return None
        if not facts.is_scaler(step.scaler) or facts.scaler_provably_disabled(step.scaler, step.ctx.scope):
            return None
        before = events[:index]
        backward = next((e for e in reversed(before) if e.kind == EventKind.SCALE_BACKWARD or e.kind in _BACKWARDS), None)
        if backward is not None and backward.kind != EventKind.SCALE_BACKWARD:
            return None  # an unscaled backward: the gradients are not scaled (AMP008's business)
        if backward is None:
            # The backward runs in another method (``optimizer_step`` of a trainer class): only when
            # nothing in this file unscales this scaler elsewhere.
            if any(e.kind == EventKind.UNSCALE and e.scaler == step.scaler for e in facts.events):
                return None
            if any(e.kind == EventKind.SCALE_BACKWARD for e in events[index + 1:] if e.order < step.order):
                return None
        start = backward.order if backward is not None else -1
        optimizers = self._clipped_optimizers(clip, step, events)
        for event in before:
            if event.order <= start:
                continue
            if event.kind == EventKind.UNSCALE and not _branch_exclusive(event, clip):
                if optimizers is None or event.optimizer is None or event.optimizer in optimizers:
                    return None
        if self._unscales_in_call_between(clip, start):
            return None
        return _Clip(clip, step, optimizers)

    def _unscales_in_call_between(self, clip: Event, start: int) -> bool:
        """A call between backward and clip that may unscale (``self.unscale_grads()``, a same-file helper)."""
        facts = self.facts
        for site in facts.calls:
            if site.ctx.scope is not clip.ctx.scope or not (start < site.ctx.order < clip.order):
                continue
            if site.node in facts.event_by_call:
                continue  # an ``unscale_`` event itself: judged with its branch above
            if "unscale" in (site.func_text or facts.code(site.node.func)).lower():
                return True
            for function in facts.called_functions(site):
                if any(e.kind == EventKind.UNSCALE for e in facts.events_by_scope.get(function.scope, [])):
                    return True
        return False

    def _clipped_optimizers(self, clip: Event, step: Event, events: list[Event]) -> list[str] | None:
        """Optimizers whose parameters the clip touches, in step order; ``None`` when unknown."""
        facts = self.facts
        candidates: list[str] = []
        for event in events:
            if event.order < step.order:
                continue
            if event.kind == EventKind.UPDATE and event.scaler == step.scaler:
                break
            if event.kind == EventKind.SCALER_STEP and event.scaler == step.scaler:
                if event.optimizer is None:
                    return None
                if event.optimizer not in candidates:
                    candidates.append(event.optimizer)
        if len(candidates) <= 1:
            return candidates or None
        owner = facts.clip_parameter_owner(clip.call)
        if owner is None:
            return None
        matched = []
        for optimizer in candidates:
            owners = facts.optimizer_parameter_owners(optimizer)
            if owners and any(o == owner or o.startswith(owner + ".") or owner.startswith(o + ".") for o in owners):
                matched.append(optimizer)
        return matched or None

    # -- fixing
    def _insert_point(self, clip: _Clip) -> cst.CSTNode | NoFix:
        """The statement to insert ``unscale_`` before: the clip's, or the loop it is nested in."""
        facts = self.facts
        event, step = clip.event, clip.step
        if clip.optimizers is None:
            return NoFix("cannot tell which optimizer's gradients are clipped")
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
        located = facts.statement_block(target)
        if located is None or not isinstance(located[0], (cst.IndentedBlock, cst.Module)):
            return NoFix("the clip is not a statement of its own")
        return target

    def _fix(self, plan: _StepPlan, clip: _Clip) -> Fix | NoFix:
        own = self._insert_point(clip)
        if isinstance(own, NoFix):
            return own
        inserts: dict[cst.CSTNode, list[str]] = {}
        seen: set[str] = set()
        for other in sorted(plan.clips, key=lambda c: c.event.order):
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
