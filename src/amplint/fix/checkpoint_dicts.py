"""AMP006's fix for a checkpoint dict: write the GradScaler's state into it, and say why not
when the scaler in scope cannot be written there (several scalers, one that may be None, one
created later)."""

from __future__ import annotations

import libcst as cst

from amplint.amp.binding_order import may_be_none_where_used
from amplint.amp.checkpoints import Checkpoint, scaler_key_like
import amplint.fix.dicts as D
import amplint.fix.edits as E
from amplint.fix.model import Fix, NoFix
import amplint.semantic.syntax as S


def flagged_scaler_fix(facts, fix: Fix | NoFix, scaler: str, ctx, side: str) -> Fix | NoFix:
    """``fix``, made unsafe for a scaler built with ``enabled=flag``: a run with AMP off saves the
    disabled scaler's ``{}``, which an enabled scaler refuses to load (``RuntimeError: The source
    state dict is empty``) where the original resumed with a fresh one. That is the restore side
    (``side`` ``"restore"``), and the save side when the file already restores this scaler."""
    if not isinstance(fix, Fix) or not facts.scaling.may_be_built_disabled(scaler, ctx.scope):
        return fix
    same = facts.identity.variable(scaler, ctx.scope)
    if side == "save" and not any(S.dotted(c.node.func) == f"{scaler}.load_state_dict"
                                  and facts.identity.variable(scaler, c.ctx.scope) == same for c in facts.calls):
        return fix
    return Fix.unsafe(fix.message, fix.changes, fix.group)


def add_scaler_to_checkpoint(facts, ctx, checkpoint: Checkpoint, scalers: list[str], optimizer_keys: list[str | None],
                             point: str) -> Fix | NoFix:
    """Add ``"scaler": scaler.state_dict()`` to the checkpoint dict (a display, a ``dict(...)``
    call, or a variable completed key by key), keyed and quoted like its optimizer key;
    ``point`` names the place in a refusal (``"this save"``)."""
    if checkpoint.record is not None:
        return NoFix(f"the checkpoint is a `{checkpoint.record}` object: give it a field for the scaler's state")
    reason = scaler_unfit(facts, ctx, scalers, point)
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
        if not isinstance(stmt, cst.SimpleStatementLine) or facts.tree.statement_block(stmt) is None:
            return NoFix("the checkpoint is built in a statement the fix cannot extend")
        written_key = facts.checkpoints.subscript_key_node(stmt)
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


def scaler_unfit(facts, ctx, scalers: list[str], point: str, none_ok: bool = False) -> str | None:
    """Why the one scaler in scope cannot be written into the fix at ``ctx``, if it cannot."""
    if len(scalers) != 1:
        return "several scalers are in scope"
    scaler = scalers[0]
    if not none_ok and (facts.checkpoints.scaler_may_be_none(scaler, ctx) or may_be_none_where_used(facts, scaler, ctx)):
        return f"`{scaler}` may be None here"
    if facts.checkpoints.scaler_created_at(scaler, ctx) > ctx.order:
        return f"`{scaler}` is created after {point}"
    return None
