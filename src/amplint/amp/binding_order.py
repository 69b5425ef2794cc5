"""Whether a name is bound by the time a call runs, asked of the control-flow graph."""

from __future__ import annotations

from typing import Any


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
