"""A call of a deprecated ``torch.cuda.amp`` / ``torch.cpu.amp`` member, rewritten to the
``torch.amp`` one with the device type the old name hard-coded (AMP001's fix)."""

from __future__ import annotations

import libcst as cst

from amplint.amp.compat import OLD_AUTOCAST_PARAMETERS
import amplint.fix.edits as E
import amplint.semantic.syntax as S


def rewrite_call(call: cst.Call, new_func: cst.BaseExpression, device: str, member: str) -> tuple[cst.Call | None, str | None]:
    """The rewritten call, or ``None`` and why it cannot be rewritten."""
    if member == "autocast":
        if S.has_star_args(call):
            return None, "`*args`/`**kwargs` hide which argument is which"
        positionals = S.positional_args(call)
        if len(positionals) > len(OLD_AUTOCAST_PARAMETERS):
            return None, "too many positional arguments for autocast"
        # Positionals become keywords: ``torch.amp.autocast("cuda", True)`` binds True to dtype.
        args = [E.keywordize(a, OLD_AUTOCAST_PARAMETERS[positionals.index(a)]) if a in positionals else a for a in call.args]
        return E.insert_arg(call.with_changes(func=new_func, args=args), 0, E.positional(E.string_literal(device))), None
    if member == "GradScaler":
        return E.insert_arg(call.with_changes(func=new_func), 0, E.positional(E.string_literal(device))), None
    # custom_fwd / custom_bwd called: as a decorator factory or on a function
    if S.keyword_arg(call, "device_type") is not None:
        return call.with_changes(func=new_func), None
    index = E.first_keyword_index(call)
    return E.insert_arg(call.with_changes(func=new_func), index, E.keyword("device_type", E.string_literal(device))), None
