"""Fixes for checkpoints written one state per file: ``torch.save(optimizer.state_dict(), "optimizer.pt")``.

The scaler's file is named after the optimizer's (``"optimizer"`` becomes ``"scaler"`` in the
path's literals); its load skips a missing file, so checkpoints written before the fix still load.
"""

from __future__ import annotations

import libcst as cst

import amplint.fix.edits as E
from amplint.fix.model import Fix, NoFix
import amplint.semantic.syntax as S

_NO_LITERAL = "no literal in the optimizer's file name to derive the scaler's file name from"


class _OptimizerToScaler(cst.CSTTransformer):
    def __init__(self) -> None:
        self.changed = False

    def _swap(self, text: str) -> str:
        for word in ("optimizer", "Optimizer", "optim"):
            if word in text:
                self.changed = True
                return text.replace(word, "scaler" if word[0].islower() else "Scaler")
        return text

    def leave_SimpleString(self, original, updated):
        return updated.with_changes(value=self._swap(updated.value))

    def leave_FormattedStringText(self, original, updated):
        return updated.with_changes(value=self._swap(updated.value))


def scaler_path_like(path: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """``os.path.join(d, "scaler.pt")`` for ``os.path.join(d, "optimizer.pt")``: the optimizer's
    file name with the scaler's name in its literals; ``None`` when no literal names the optimizer."""
    if path is None:
        return None
    swap = _OptimizerToScaler()
    new = path.visit(swap)
    return new if swap.changed else None  # type: ignore[return-value]


def save_scaler_file(facts, event, scaler: str) -> Fix | NoFix:
    """``torch.save(scaler.state_dict(), "scaler.pt")`` after the optimizer's ``torch.save`` at ``event``."""
    stmt = event.ctx.stmt
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
            and stmt.body[0].value is event.call and facts.tree.statement_block(stmt) is not None):
        return NoFix("the optimizer is saved in a statement the fix cannot follow")
    path = scaler_path_like(S.argument(event.call, 1, "f"))
    if path is None:
        return NoFix(_NO_LITERAL)
    code = facts.module.code_for_node
    new = cst.parse_statement(f"{code(event.call.func)}({scaler}.state_dict(), {code(path)})\n")
    return Fix.safe(f"Save `{scaler}.state_dict()` to its own file beside the optimizer's", {stmt: E.insert_after(stmt, new)})


def load_scaler_file(facts, event, scaler: str, stmt: cst.CSTNode) -> Fix | NoFix:
    """After ``optimizer.load_state_dict(torch.load(".../optimizer.pt"))`` (``event``), load the
    scaler's own file when there is one."""
    args = S.positional_args(event.call)
    load = args[0].value if args else None
    site = facts.call_site(load) if isinstance(load, cst.Call) else None
    if site is None or site.qualname != "torch.load":
        return NoFix("the checkpoint the optimizer state comes from is not a `ckpt[\"key\"]` lookup")
    path = scaler_path_like(S.argument(load, 0, "f"))
    if path is None:
        return NoFix(_NO_LITERAL)
    scaler_load = load.with_changes(args=[load.args[0].with_changes(value=path), *load.args[1:]])
    new = cst.parse_statement(
        f"try:\n    {scaler}.load_state_dict({facts.module.code_for_node(scaler_load)})\nexcept FileNotFoundError:\n    pass\n"
    )
    return Fix.safe(f"Restore `{scaler}` from its own file after the optimizer", {stmt: E.insert_after(stmt, new)})
