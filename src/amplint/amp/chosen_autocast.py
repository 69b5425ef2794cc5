"""Autocast contexts chosen by a flag: ``ctx = torch.autocast if amp else nullcontext`` and
``ctx = accelerator.autocast if mixed else nullcontext``, then ``with ctx(...):``.

Either order of the two branches; the name is assigned exactly once, to a choice between an
autocast (a class, or a framework's method named like one) and a null-context class. The region
such a ``with`` opens is conditional: it may run with autocast off.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

import amplint.amp.catalogue as API
import amplint.semantic.syntax as S
from amplint.semantic.records import Scope


def _single_choice(facts: Any, name: str, scope: Scope) -> tuple[cst.IfExp, Scope] | None:
    assignments = facts.assignments_to(name, scope)
    if len(assignments) != 1 or not isinstance(assignments[0].value, cst.IfExp):
        return None
    return assignments[0].value, assignments[0].ctx.scope


def conditional_autocast_class(facts: Any, name: str, scope: Scope) -> str | None:
    """The autocast class ``name`` holds when it is assigned ``<autocast class> if c else <null context>``."""
    chosen = _single_choice(facts, name, scope)
    if chosen is None:
        return None
    choice, where = chosen
    names = [facts.bindings.qualname(branch, where) if S.dotted(branch) is not None else None
             for branch in (choice.body, choice.orelse)]
    autocasts = [n for n in names if n in API.AUTOCAST]
    nulls = [n for n in names if n in API.NULL_CONTEXTS]
    return autocasts[0] if len(autocasts) == 1 and len(nulls) == 1 else None


def chosen_named_autocast(facts: Any, expr: cst.BaseExpression, scope: Scope) -> Any:
    """The conditional region of ``with ctx():`` when ``ctx`` chooses between a context named like
    autocast (``accelerator.autocast``) and a null context; ``None`` otherwise."""
    if not isinstance(expr, cst.Call) or expr.args or S.dotted(expr.func) is None:
        return None
    chosen = _single_choice(facts, S.dotted(expr.func), scope)
    if chosen is None:
        return None
    choice, where = chosen
    branches = (choice.body, choice.orelse)
    nulls = [b for b in branches if S.dotted(b) is not None and facts.bindings.qualname(b, where) in API.NULL_CONTEXTS]
    others = [b for b in branches if b not in nulls]
    if len(nulls) != 1 or len(others) != 1:
        return None
    region = facts.named_autocast.region_of_named(cst.Call(func=others[0]), where)
    if region is not None:
        region.conditional = True
    return region
