from __future__ import annotations

from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.amp import Event
from amplint.amp.checkpoint_helpers import CheckpointHelperFacts, HelperCheckpoint, state_dict_methods
from amplint.amp.checkpoint_keys import unwritten_scaler_key
from amplint.amp.binding_order import may_be_bound_at, not_restorable_at, set_before
from amplint.amp.checkpoints import Checkpoint
from amplint.amp.checkpoints import scaler_key_like as _styled_key  # noqa: F401 - the fix-shape tests import it here
from amplint.fix import Fix, NoFix
from amplint.fix.checkpoint_dicts import add_scaler_to_checkpoint, flagged_scaler_fix, scaler_unfit
from amplint.fix.checkpoint_files import save_scaler_file
from amplint.fix.scaler_restore import restore_beside_optimizer
import amplint.fix.edits as E
from amplint.model import FixSafety
from amplint.rules.base import SCALER_TRIGGERS, Invalid, Rule, Violation


class ScalerStateNotCheckpointed(Rule):
    """
    ## What it does
    Finds checkpoints that save the optimizer (and model) state but not the `GradScaler`'s while an
    enabled scaler is in scope (a local, a parameter, a module-level scaler, `self.scaler`, or a
    `NativeScaler`-style wrapper; a scaler that is `None` unless a flag turns AMP on, as in
    `scaler = None; if args.amp: scaler = GradScaler()` or `self.scaler = None` in `__init__`,
    counts when the file scales a loss with it):

    - dict literals passed to `torch.save`, a dict built in a variable first (and completed key by
      key), `dict(...)` calls, dataclass snapshots (`torch.save(asdict(snapshot), path)`, or
      `state = asdict(snapshot)` saved later unchanged);
    - one file per state: `torch.save(optimizer.state_dict(), "optimizer.pt")` with no scaler file
      saved beside it;
    - a save helper defined inside the training function that reads the model and optimizer
      from the closure and leaves out the scaler beside them;
    - a class that owns a scaler and whose `state_dict()` returns only the model and optimizer;
    - checkpoint helpers, in the same file or in another module of the project
      (`save_checkpoint(model, optimizer, epoch, path)` from `utils.py`), methods of a saver object
      of a class of this file (`saver = CheckpointSaver(...); saver.save_model(model, optimizer)`), and the checkpointers of
      timm (`CheckpointSaver`, `resume_checkpoint`) and fvcore/detectron2 (`Checkpointer`, and a
      subclass of one without an `__init__` of its own), called with the optimizer but not the
      scaler; a dict handed to a helper that saves it as it is (`save_checkpoint(state, is_best)`,
      `save_on_master(...)`, a pass-through `def save_ckp(state, path)` nested in `main()`) is
      checked like a `torch.save`. A helper of this file that only hands its parameters on to
      another (`save_checkpoint(params, model, optimizer=None, scaler=None)` calling the library's
      `save_checkpoint(..., scaler=scaler)`) is read as the one it calls, and an entry
      `optimizer.state_dict() if optimizer is not None else None` saves the optimizer.

    On the resume side it finds code that restores the optimizer (`optimizer.load_state_dict(...)`,
    or a loader helper) but never the scaler, including a resume that runs before the scaler is
    built (yolov5's `smart_resume`: the state is lost all the same), and a scaler restored from a key
    (`scaler.load_state_dict(ckpt["scaler"])`) that no checkpoint saved in the file or the modules
    it imports ever writes.

    ## Why is this bad?
    The scaler's state (the current scale and its growth tracker) is part of the training state.
    A run resumed without it starts again at the initial scale (65536 by default) and skips
    optimizer steps (inf/NaN gradients) until it has backed off to the scale the first run had
    already found, so each restart silently loses a burst of updates. The AMP examples save
    `scaler.state_dict()` next to the model and optimizer and restore it on resume.

    ## Example
    ```python
    import torch

    scaler = torch.amp.GradScaler("cuda")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
    ```

    ## Use instead
    ```python
    import torch

    scaler = torch.amp.GradScaler("cuda")
    torch.save(
        {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scaler": scaler.state_dict()},
        path,
    )
    ```

    ## Fix safety
    The fix is safe (but see a scaler built with a flag, below). On save it adds
    `"scaler": scaler.state_dict()` (spelled as the scaler is in scope, keyed like the dict's other
    keys, e.g. `"scaler_state_dict"`), or, for one file per state,
    `torch.save(scaler.state_dict(), "scaler.pt")` beside the optimizer's file. On load it
    inserts `if "scaler" in checkpoint: scaler.load_state_dict(checkpoint["scaler"])` right after
    the optimizer is restored, with the key the save side of the same file uses (for one file per
    state, a load of `scaler.pt` that skips a missing file), guarded so that checkpoints written
    before the fix still load. A helper with a scaler parameter the call leaves out
    (`save_checkpoint(..., scaler=None)`) is passed the scaler (`scaler=scaler`). No fix is offered
    when the scaler may be `None` there, when `self.scaler` is not set by `__init__` or earlier on
    every path of the calling method (it may not exist yet when the call runs), when a restore
    would read a scaler that does not exist yet on every path there or that is built again
    afterwards (`__init__` resumes before `train()` builds `self.scaler`: the restore would raise,
    and the new scaler would throw the restored state away), when a nested
    helper is defined before its enclosing function binds the scaler, when several scalers are in scope, when the checkpoint
    variable cannot be seen, when a helper has no scaler parameter (the helper must change, in its
    own file), for dataclass snapshots (they need a field) and for a scaler key no save writes.

    For a scaler built with a flag (`GradScaler(enabled=args.amp)`) the restore is unsafe, and so
    is the save when the file already restores that scaler: a run with AMP off saves the disabled
    scaler's empty state, and resuming it with AMP on then raises `RuntimeError: The source state
    dict is empty` where the original resumed with a fresh scaler.

    Helpers in other modules are followed by the project pass; `--no-project` (or
    `project-analysis = false`) lints each file on its own.

    ## References
    - [CUDA Automatic Mixed Precision examples: saving/resuming](https://pytorch.org/docs/stable/notes/amp_examples.html)
    - [Automatic Mixed Precision recipe: saving/resuming](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    - [torch.amp.GradScaler.state_dict](https://pytorch.org/docs/stable/amp.html)
    """

    code = "AMP006"
    name = "scaler-state-not-checkpointed"
    summary = "Checkpoint saves/restores the optimizer but not the GradScaler"
    fix_safety = FixSafety.SOMETIMES
    fix_withheld = (
        "when the scaler may be `None` or is built after the restore, several scalers are in scope, a "
        "helper has no scaler parameter, or the checkpoint is an object or cannot be seen"
    )
    triggers = SCALER_TRIGGERS

    valid = (
        dedent("""\
            import torch
            scaler = torch.amp.GradScaler('cuda')
            torch.save(model.state_dict(), path)
        """),
        dedent("""\
            import torch
            torch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict()}, path)
        """),
        dedent("""\
            import torch
            scaler = torch.amp.GradScaler('cuda')
            torch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict(), 'amp_scaler': scaler.state_dict()}, path)
        """),
        dedent("""\
            import torch
            scaler = torch.amp.GradScaler('cuda', enabled=False)
            torch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict()}, path)
        """),
        dedent("""\
            import torch
            scaler = torch.amp.GradScaler('cuda')
            ckpt = torch.load(path)
            optimizer.load_state_dict(ckpt['optimizer'])
            scaler.load_state_dict(ckpt['scaler'])
        """),
        dedent("""\
            import torch
            def save_checkpoint(model, optimizer, path, scaler=None):
                state = {'model': model.state_dict(), 'optimizer': optimizer.state_dict()}
                if scaler is not None:
                    state['scaler'] = scaler.state_dict()
                torch.save(state, path)
            scaler = torch.amp.GradScaler('cuda')
            save_checkpoint(model, optimizer, path, scaler)
        """),
    )
    invalid = (
        Invalid(
            dedent("""\
                import torch
                scaler = torch.amp.GradScaler('cuda')
                torch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict()}, path)
            """),
            fixed=dedent("""\
                import torch
                scaler = torch.amp.GradScaler('cuda')
                torch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict(), 'scaler': scaler.state_dict()}, path)
            """),
        ),
        Invalid(
            dedent("""\
                import torch
                scaler = torch.amp.GradScaler('cuda')
                ckpt = torch.load(path)
                optimizer.load_state_dict(ckpt['optimizer_state_dict'])
            """),
            fixed=dedent("""\
                import torch
                scaler = torch.amp.GradScaler('cuda')
                ckpt = torch.load(path)
                optimizer.load_state_dict(ckpt['optimizer_state_dict'])
                if 'scaler_state_dict' in ckpt:
                    scaler.load_state_dict(ckpt['scaler_state_dict'])
            """),
        ),
        Invalid(
            dedent("""\
                import torch
                scaler = torch.amp.GradScaler('cuda')
                torch.save(dict(model=model.state_dict(), optimizer=optimizer.state_dict()), path)
            """),
            fixed=dedent("""\
                import torch
                scaler = torch.amp.GradScaler('cuda')
                torch.save(dict(model=model.state_dict(), optimizer=optimizer.state_dict(), scaler=scaler.state_dict()), path)
            """),
        ),
        Invalid(
            dedent("""\
                import torch
                def save_checkpoint(model, optimizer, path, scaler=None):
                    state = {'model': model.state_dict(), 'optimizer': optimizer.state_dict()}
                    if scaler is not None:
                        state['scaler'] = scaler.state_dict()
                    torch.save(state, path)
                scaler = torch.amp.GradScaler('cuda')
                save_checkpoint(model, optimizer, path)
            """),
            fixed=dedent("""\
                import torch
                def save_checkpoint(model, optimizer, path, scaler=None):
                    state = {'model': model.state_dict(), 'optimizer': optimizer.state_dict()}
                    if scaler is not None:
                        state['scaler'] = scaler.state_dict()
                    torch.save(state, path)
                scaler = torch.amp.GradScaler('cuda')
                save_checkpoint(model, optimizer, path, scaler=scaler)
            """),
        ),
    )

    def check(self) -> Iterator[Violation]:
        reported: set[int] = set()
        for event in self.facts.checkpoints.checkpoint_saves:
            violation = self._check_save(event)
            if violation is None:
                continue
            # One dict saved several times (``latest.pt`` and ``best.pt``) is one finding.
            checkpoint = self.facts.checkpoints.saved_checkpoint(event)
            written = checkpoint.container if checkpoint is not None and checkpoint.container is not None else event
            if id(written) not in reported:
                reported.add(id(written))
                yield violation
        for method in state_dict_methods(self.facts):
            violation = self._check_state_method(method)
            if violation is not None:
                yield violation
        for event in self.facts.checkpoints.state_restores:
            violation = self._check_load(event) or self._check_unwritten_key(event)
            if violation is not None:
                yield violation
        for helper in CheckpointHelperFacts(self.facts).calls():
            violation = self._check_helper(helper)
            if violation is not None:
                yield violation

    # -- save side
    def _check_save(self, event: Event) -> Violation | None:
        facts = self.facts
        scalers = facts.checkpoints.checkpointed_scalers(event.ctx)
        checkpoint = facts.checkpoints.saved_checkpoint(event) if scalers else None
        if checkpoint is None or facts.checkpoints.scaler_saved_beside(event, scalers):
            return None
        return self._check_checkpoint(event.call, checkpoint, scalers, event.ctx, lambda keys: self._save_fix(event, checkpoint, scalers, keys))

    def _check_checkpoint(self, node, checkpoint: Checkpoint, scalers: list[str], ctx, fix, where: str = "This checkpoint") -> Violation | None:
        """The finding for a checkpoint that holds optimizer state and no scaler state."""
        facts = self.facts
        if checkpoint.has_spread:
            return None
        optimizer_keys = [key for key, value, _ in checkpoint.items if facts.checkpoints.is_optimizer_state(key, value)]
        if not optimizer_keys or facts.checkpoints.holds_scaler_state(checkpoint, scalers):
            return None
        has_model = any(facts.checkpoints.is_model_state(key, value) for key, value, _ in checkpoint.items)
        names = ", ".join(f"`{s}`" for s in scalers)
        message = (
            f"{where} saves the optimizer{' and model' if has_model else ''} state but not the GradScaler's "
            f"({names} is in scope): a resumed run restarts at scale 65536 and skips steps until it backs off again. "
            f"Save `{scalers[0]}.state_dict()` with it"
        )
        return self.violation(node, message, fix=flagged_scaler_fix(self.facts, fix(optimizer_keys), scalers[0], ctx, "save"))

    def _check_state_method(self, method) -> Violation | None:
        """``def state_dict(self): return {...}`` of a class whose GradScaler is left out."""
        scalers = self.facts.checkpoints.checkpointed_scalers(method.ctx)
        checkpoint = self.facts.checkpoints.checkpoint_value(method.value, method.ctx) if scalers else None
        if checkpoint is None:
            return None
        where = f"`{method.function.class_name}.state_dict`"
        return self._check_checkpoint(
            method.value, checkpoint, scalers, method.ctx,
            lambda keys: add_scaler_to_checkpoint(self.facts, method.ctx, checkpoint, scalers, keys, "this state_dict"), where,
        )

    def _save_fix(self, event: Event, checkpoint: Checkpoint, scalers: list[str], optimizer_keys: list[str | None]) -> Fix | NoFix:
        if not checkpoint.single:
            return add_scaler_to_checkpoint(self.facts, event.ctx, checkpoint, scalers, optimizer_keys, "this save")
        reason = scaler_unfit(self.facts, event.ctx, scalers, "this save")
        return NoFix(reason) if reason is not None else save_scaler_file(self.facts, event, scalers[0])

    # -- load side
    def _check_load(self, event: Event) -> Violation | None:
        facts = self.facts
        if not facts.checkpoints.restores_optimizer(event):
            return None
        scalers = facts.checkpoints.checkpointed_scalers(event.ctx)
        if not scalers or facts.checkpoints.scaler_restored_beside(event, scalers):
            return None
        names = ", ".join(f"`{s}`" for s in scalers)
        message = (
            f"The optimizer state is restored here but the GradScaler's is not ({names} is in scope and "
            "`load_state_dict` is never called on it): the resumed run restarts at scale 65536 and skips steps"
        )
        return self.violation(event.call, message, fix=flagged_scaler_fix(self.facts, restore_beside_optimizer(self.facts, event, scalers), scalers[0], event.ctx, "restore"))

    # -- a resume that reads a scaler key no save writes
    def _check_unwritten_key(self, event: Event) -> Violation | None:
        found = unwritten_scaler_key(self.facts, event)
        if found is None:
            return None
        key, (module, function, save) = found
        place = f"{module}:{save.line}" if module else f"line {save.line}"
        message = (
            f'The scaler is restored from "{key}", a key that no save in this file or the modules it imports writes '
            f"(`{function.name}` at {place} saves the optimizer without it): the scaler is never restored and the "
            "resumed run restarts at scale 65536"
        )
        return self.violation(event.call, message, fix=NoFix("the save side must write the scaler's state first"))

    # -- helpers that save or restore what they are handed
    def _check_helper(self, helper: HelperCheckpoint) -> Violation | None:
        site, callee = helper.site, helper.callee
        scalers = list(helper.scalers)
        if helper.side != "save" and not any(may_be_bound_at(self.facts, s, site) for s in scalers):
            # The resume runs before the scaler is built (yolov5 builds it after smart_resume): the
            # state is lost all the same, but no restore can go here until the scaler moves up.
            names = ", ".join(f"`{s}`" for s in scalers)
            return self.violation(site.node, (
                f"{callee.where} restores the optimizer state it is handed but the GradScaler ({names}) is built only "
                "after this resume, so its state is never restored: the resumed run restarts at scale 65536 and skips steps"
            ), fix=NoFix("build the GradScaler before the resume, then restore its state there"))
        if helper.whole is not None:
            checkpoint = self.facts.checkpoints.checkpoint_value(helper.whole, site.ctx)
            if checkpoint is None:
                return None
            where = f"The checkpoint handed to {callee.where}"
            return self._check_checkpoint(
                site.node, checkpoint, scalers, site.ctx,
                lambda keys: add_scaler_to_checkpoint(self.facts, site.ctx, checkpoint, scalers, keys, "this call"), where,
            )
        names = ", ".join(f"`{s}`" for s in scalers)
        what = "saved" if helper.side == "save" else "restored"
        if helper.scaler_param is not None:
            message = (
                f"{callee.where} is called without its `{helper.scaler_param}` argument, so the GradScaler's state "
                f"({names} is in scope) is not {what} with the optimizer's: a resumed run restarts at scale 65536 and skips steps"
            )
        elif helper.side == "save":
            message = (
                f"{callee.where} saves the optimizer state it is handed but not the GradScaler's ({names} is in scope "
                "and not passed): a resumed run restarts at scale 65536 and skips steps"
            )
        else:
            message = (
                f"{callee.where} restores the optimizer state it is handed but not the GradScaler's ({names} is in scope "
                "and not passed): the resumed run restarts at scale 65536 and skips steps"
            )
        return self.violation(site.node, message, fix=self._helper_fix(helper))

    def _helper_fix(self, helper: HelperCheckpoint) -> Fix | NoFix:
        site, callee = helper.site, helper.callee
        if helper.scaler_param is None:
            verb = "save" if helper.side == "save" else "restore"
            return NoFix(f"`{callee.function.name}` has no scaler parameter: give it one and {verb} the scaler's state there")
        # A ``scaler=None`` default takes a scaler that may be None; ``**checkpointables`` do not.
        reason = scaler_unfit(self.facts, site.ctx, list(helper.scalers), "this call", none_ok=not callee.function.has_varkw)
        if reason is not None:
            return NoFix(reason)
        scaler = helper.scalers[0]
        if scaler.startswith("self.") and not set_before(self.facts, scaler, site):
            return NoFix(f"`{scaler}` may not be set yet when this call runs")
        reason = not_restorable_at(self.facts, scaler, site.ctx) if helper.side == "load" else None
        if reason is not None:
            return NoFix(reason)
        call = site.node
        arg = E.keyword(helper.scaler_param, cst.parse_expression(scaler))
        fix = Fix.safe(f"Pass `{helper.scaler_param}={scaler}`", {call: E.insert_arg(call, len(call.args), arg)})
        return flagged_scaler_fix(self.facts, fix, scaler, site.ctx, helper.side)
