"""Whether a name is bound by the time a call runs, asked of the control-flow graph."""

from __future__ import annotations

import re
from typing import Any

import amplint.semantic.syntax as S


def may_be_bound_at(facts: Any, name: str, site: Any) -> bool:
    """Some binding of ``name`` can have run when ``site`` runs (a parameter, a binding in another
    scope, or one that reaches the call, in an earlier iteration too)."""
    flow = facts.control_flow
    assignments = facts.assignments_to(name, site.ctx.scope)
    return not assignments or any(
        a.ctx.scope is not site.ctx.scope or flow.reaches(a.ctx, site.ctx, across_iterations=True) for a in assignments
    )


def set_before(facts: Any, attribute: str, site: Any) -> bool:
    """``self.x`` is set whenever ``site`` runs: by ``__init__``, or earlier on every path of the
    same method."""
    flow = facts.control_flow
    for assignment in facts.assignments_to(attribute, site.ctx.scope):
        scope = assignment.ctx.scope
        if scope is site.ctx.scope and flow.dominates(assignment.ctx, site.ctx):
            return True
        if scope is not site.ctx.scope and scope.name == "__init__" and not assignment.ctx.branches:
            return True
    return False


def _named(facts: Any, assignment: Any) -> str:
    function = facts.callgraph.function_of(assignment.ctx.scope)
    name = function.node.name.value if function is not None else "module level"
    return f"`{name}` (line {facts.position(assignment.node).start.line})"


def not_restorable_at(facts: Any, scaler: str, ctx: Any) -> str | None:
    """Why a ``scaler.load_state_dict(...)`` written at ``ctx`` would not restore the scaler the
    training uses, if it would not: the scaler may not exist there on every path (``self.scaler``
    set only in a ``train()`` that runs after the resume, or in ``__init__`` after the call that
    resumes), or it is built again afterwards, replacing the state just restored."""
    flow = facts.control_flow
    assignments = facts.assignments_to(scaler, ctx.scope)
    later = [a for a in assignments if a.ctx.scope is ctx.scope and a.ctx is not ctx and flow.reaches(ctx, a.ctx)]
    if not scaler.startswith("self."):
        return f"`{scaler}` is built again after this point, at {_named(facts, later[0])}" if later else None
    function = facts.callgraph.function_of(ctx.scope)
    elsewhere = [a for a in assignments if a.ctx.scope is not ctx.scope and a.ctx.scope.name != "__init__"]
    in_init = [a for a in assignments if a.ctx.scope.name == "__init__" and not a.ctx.branches]
    if elsewhere and _built_by_every_caller(facts, function, elsewhere):
        return None  # ``_setup_train`` builds ``self.scaler``, then calls ``resume_training``
    if later or (elsewhere and in_init):
        return f"`{scaler}` is built again in {_named(facts, (later or elsewhere)[0])}, which would replace the restored state"
    if elsewhere:
        return (f"`{scaler}` is set in {_named(facts, elsewhere[0])}: it may not exist yet here, "
                "and setting it would replace the restored state")
    if any(a.ctx.scope is ctx.scope and flow.dominates(a.ctx, ctx) for a in assignments):
        return None
    if not in_init:
        return f"`{scaler}` may not be set yet here"
    from_init = [site for site in facts.callgraph.callers_of(function) if site.ctx.scope.name == "__init__"] if function else []
    for site in from_init:
        if not any(a.ctx.scope is site.ctx.scope and flow.dominates(a.ctx, site.ctx) for a in in_init):
            return f"`__init__` resumes (line {facts.position(site.node).start.line}) before it sets `{scaler}`"
    return None


def _built_by_every_caller(facts: Any, function: Any, assignments: list) -> bool:
    """Every call of ``function`` is made by a method that has built the attribute on every path
    before the call and does not build it again after; no other method builds it."""
    flow = facts.control_flow
    callers = facts.callgraph.callers_of(function) if function is not None else []
    scopes = {id(site.ctx.scope) for site in callers}
    if not callers or any(id(a.ctx.scope) not in scopes for a in assignments):
        return False
    for site in callers:
        own = [a for a in assignments if a.ctx.scope is site.ctx.scope]
        if not any(flow.dominates(a.ctx, site.ctx) for a in own) or any(flow.reaches(site.ctx, a.ctx) for a in own):
            return False
    return True


def may_be_none_where_used(facts: Any, name: str, ctx: Any) -> bool:
    """The function of ``ctx`` shows that ``name`` may be ``None``: it tests ``name is None`` /
    ``name is not None``, or ``name`` is a parameter that a caller in this file passes ``None``
    (or a name assigned ``None``: ``scaler = GradScaler() if amp else None``)."""
    tested = re.compile(rf"(?<![\w.]){re.escape(name)}\s+is\s+(?:not\s+)?None\b")
    for statement, if_ctx in facts.records.if_statements:
        if if_ctx.scope is ctx.scope and tested.search(facts.code(statement.test)):
            return True
    function = facts.callgraph.function_of(ctx.scope)
    if function is None or name not in function.params:
        return False
    for value, scope in facts.values.parameter_values(function, name) or ():
        if S.may_be_none(value):
            return True
        passed = S.dotted(value)
        if passed is not None and "." not in passed and any(
            a.value is None or S.may_be_none(a.value) for a in facts.assignments_to(passed, scope)
        ):
            return True
    return False
