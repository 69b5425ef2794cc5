from __future__ import annotations

from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.amp import Event
from amplint.amp.checkpoints import Checkpoint, scaler_key_like
from amplint.amp.checkpoints import scaler_key_like as _styled_key  # noqa: F401 - the fix-shape tests import it here
from amplint.fix import Fix, NoFix
from amplint.fix import dicts as D
from amplint.fix import edits as E
from amplint.model import FixSafety
from amplint.rules.base import SCALER_TRIGGERS, Invalid, Rule, Violation


class ScalerStateNotCheckpointed(Rule):
    """
    ## What it does
    Finds checkpoints that save the optimizer (and model) state but not the `GradScaler`'s while a
    scaler is in scope (a local, a parameter, a module-level scaler or `self.scaler`): dict literals
    passed to `torch.save`, a dict built in a variable first, `dict(...)` calls and
    `checkpoint["optimizer"] = ...` assignments. It also finds resume code that restores the
    optimizer with `optimizer.load_state_dict(...)` but never calls `scaler.load_state_dict(...)`.

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
    The fix is safe. On save it adds `"scaler": scaler.state_dict()` (spelled as the scaler is in
    scope, keyed like the dict's other keys, e.g. `"scaler_state_dict"`). On load it inserts
    `if "scaler" in checkpoint: scaler.load_state_dict(checkpoint["scaler"])` right after the
    optimizer is restored, with the key the save side of the same file uses, guarded so that
    checkpoints written before the fix still load. No fix is offered when the scaler may be `None`
    there, when several scalers are in scope, or when the checkpoint variable cannot be seen.

    ## References
    - [CUDA Automatic Mixed Precision examples: saving/resuming](https://pytorch.org/docs/stable/notes/amp_examples.html)
    - [Automatic Mixed Precision recipe: saving/resuming](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    - [torch.amp.GradScaler.state_dict](https://pytorch.org/docs/stable/amp.html)
    """

    code = "AMP006"
    name = "scaler-state-not-checkpointed"
    summary = "Checkpoint saves/restores the optimizer but not the GradScaler"
    fix_safety = FixSafety.SAFE
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
    )

    def check(self) -> Iterator[Violation]:
        reported: set[int] = set()
        for event in self.facts.checkpoint_saves:
            violation = self._check_save(event)
            if violation is None:
                continue
            # One dict saved several times (``latest.pt`` and ``best.pt``) is one finding.
            checkpoint = self.facts.saved_checkpoint(event)
            written = checkpoint.container if checkpoint is not None and checkpoint.container is not None else event
            if id(written) not in reported:
                reported.add(id(written))
                yield violation
        for event in self.facts.state_restores:
            violation = self._check_load(event)
            if violation is not None:
                yield violation

    # -- save side
    def _check_save(self, event: Event) -> Violation | None:
        facts = self.facts
        scalers = facts.checkpointed_scalers(event.ctx)
        checkpoint = facts.saved_checkpoint(event) if scalers else None
        if checkpoint is None or checkpoint.has_spread:
            return None
        optimizer_keys = [key for key, value, _ in checkpoint.items if facts.is_optimizer_state(key, value)]
        if not optimizer_keys or facts.holds_scaler_state(checkpoint, scalers) or facts.scaler_saved_beside(event, scalers):
            return None
        has_model = any(facts.is_model_state(key, value) for key, value, _ in checkpoint.items)
        names = ", ".join(f"`{s}`" for s in scalers)
        message = (
            f"This checkpoint saves the optimizer{' and model' if has_model else ''} state but not the GradScaler's "
            f"({names} is in scope): a resumed run restarts at scale 65536 and skips steps until it backs off again. "
            f"Save `{scalers[0]}.state_dict()` with it"
        )
        return self.violation(event.call, message, fix=self._save_fix(event, checkpoint, scalers, optimizer_keys))

    def _save_fix(self, event: Event, checkpoint: Checkpoint, scalers: list[str], optimizer_keys: list[str | None]) -> Fix | NoFix:
        reason = self._scaler_unfit(event, scalers, "this save")
        if reason is not None:
            return NoFix(reason)
        scaler = scalers[0]
        key = scaler_key_like(next((k for k in optimizer_keys if k), None))
        keys = checkpoint.key_nodes
        like = keys[0] if keys else None
        value = cst.parse_expression(f"{scaler}.state_dict()")
        message = f'Add "{key}": {scaler}.state_dict() to the checkpoint'
        container = checkpoint.container
        if checkpoint.optimizer_subscript_stmts and checkpoint.variable is not None:
            # Completed key by key: add the scaler's line after the optimizer's.
            stmt = checkpoint.optimizer_subscript_stmts[-1]
            if not isinstance(stmt, cst.SimpleStatementLine) or self.facts.statement_block(stmt) is None:
                return NoFix("the checkpoint is built in a statement the fix cannot extend")
            written_key = self.facts.subscript_key_node(stmt)
            like = written_key if written_key is not None else like
            new = cst.parse_statement(f"{checkpoint.variable}[{D.quoted(key, like)}] = {scaler}.state_dict()\n")
            return Fix.safe(message, {stmt: E.insert_after(stmt, new)})
        if isinstance(container, cst.Dict):
            return Fix.safe(message, {container: D.append_item(container, D.quoted(key, like), value)})
        if isinstance(container, cst.Call):
            if not key.isidentifier():
                return NoFix("the key is not a valid keyword")
            return Fix.safe(message, {container: E.insert_arg(container, len(container.args), E.keyword(key, value))})
        return NoFix("the checkpoint dict is not visible here")

    def _scaler_unfit(self, event: Event, scalers: list[str], point: str) -> str | None:
        """Why the one scaler in scope cannot be written into the fix at ``event``, if it cannot."""
        if len(scalers) != 1:
            return "several scalers are in scope"
        scaler = scalers[0]
        if self.facts.scaler_may_be_none(scaler, event.ctx):
            return f"`{scaler}` may be None here"
        if self.facts.scaler_created_at(scaler, event.ctx) > event.order:
            return f"`{scaler}` is created after {point}"
        return None

    # -- load side
    def _check_load(self, event: Event) -> Violation | None:
        facts = self.facts
        if not facts.restores_optimizer(event):
            return None
        scalers = facts.checkpointed_scalers(event.ctx)
        if not scalers or facts.scaler_restored_beside(event, scalers):
            return None
        names = ", ".join(f"`{s}`" for s in scalers)
        message = (
            f"The optimizer state is restored here but the GradScaler's is not ({names} is in scope and "
            "`load_state_dict` is never called on it): the resumed run restarts at scale 65536 and skips steps"
        )
        return self.violation(event.call, message, fix=self._load_fix(event, scalers))

    def _load_fix(self, event: Event, scalers: list[str]) -> Fix | NoFix:
        reason = self._scaler_unfit(event, scalers, "the optimizer is restored")
        if reason is not None:
            return NoFix(reason)
        scaler = scalers[0]
        lookup = self.facts.checkpoint_lookup(event)
        if lookup is None:
            return NoFix("the checkpoint the optimizer state comes from is not a `ckpt[\"key\"]` lookup")
        checkpoint, optimizer_key, key_node = lookup
        stmt = event.ctx.stmt
        if not isinstance(stmt, cst.SimpleStatementLine) or self.facts.statement_block(stmt) is None:
            return NoFix("the optimizer is restored in a statement the fix cannot follow")
        key = self.facts.saved_scaler_key(scaler, optimizer_key) or scaler_key_like(optimizer_key)
        literal = D.quoted(key, key_node)
        new = cst.parse_statement(f"if {literal} in {checkpoint}:\n    {scaler}.load_state_dict({checkpoint}[{literal}])\n")
        message = f'Restore `{scaler}` from {checkpoint}["{key}"] after the optimizer'
        return Fix.safe(message, {stmt: E.insert_after(stmt, new)})
