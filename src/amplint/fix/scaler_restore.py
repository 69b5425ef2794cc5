"""The restore a resume that loads the optimizer's state and not the GradScaler's is missing (AMP006)."""

from __future__ import annotations

import libcst as cst

from amplint.amp.binding_order import not_restorable_at
from amplint.amp.checkpoints import scaler_key_like
import amplint.fix.dicts as D
from amplint.fix.checkpoint_dicts import scaler_unfit
from amplint.fix.checkpoint_files import load_scaler_file
import amplint.fix.edits as E
from amplint.fix.model import Fix, NoFix


def restore_beside_optimizer(facts, event, scalers: list[str]) -> Fix | NoFix:
    """Restore the scaler's state right after the optimizer's: from the same checkpoint dict under
    the key its save writes (or one styled like the optimizer's), or from its own file."""
    reason = scaler_unfit(facts, event.ctx, scalers, "the optimizer is restored")
    reason = reason or not_restorable_at(facts, scalers[0], event.ctx)
    if reason is not None:
        return NoFix(reason)
    scaler = scalers[0]
    stmt = event.ctx.stmt
    if not isinstance(stmt, cst.SimpleStatementLine) or facts.tree.statement_block(stmt) is None:
        return NoFix("the optimizer is restored in a statement the fix cannot follow")
    lookup = facts.checkpoints.checkpoint_lookup(event)
    if lookup is None:
        return load_scaler_file(facts, event, scaler, stmt)
    checkpoint, optimizer_key, key_node = lookup
    key = facts.checkpoints.saved_scaler_key(scaler, optimizer_key) or scaler_key_like(optimizer_key)
    literal = D.quoted(key, key_node)
    new = cst.parse_statement(f"if {literal} in {checkpoint}:\n    {scaler}.load_state_dict({checkpoint}[{literal}])\n")
    message = f'Restore `{scaler}` from {checkpoint}["{key}"] after the optimizer'
    return Fix.safe(message, {stmt: E.insert_after(stmt, new)})
