"""Framework settings read from the code: whether a LightningModule leaves Lightning's automatic
optimization on, and the mixed precision of the Lightning ``Trainer`` that fits it. A DeepSpeed
config's precision is :mod:`amplint.amp.deepspeed_configs`'s."""

from __future__ import annotations

from typing import Any

import libcst as cst

import amplint.semantic.syntax as S
from amplint.amp.frameworks import LEGACY_PRECISIONS, LIGHTNING_TRAINERS
from amplint.semantic.records import Scope

LIGHTNING_MODULES = frozenset({
    "lightning.LightningModule", "lightning.pytorch.LightningModule", "lightning.pytorch.core.LightningModule",
    "lightning.pytorch.core.module.LightningModule", "pytorch_lightning.LightningModule",
    "pytorch_lightning.core.LightningModule", "pytorch_lightning.core.module.LightningModule",
})


def is_lightning_module(facts: Any, owner: Scope) -> bool:
    """``owner`` is a class deriving from Lightning's ``LightningModule``."""
    node = owner.node
    parent = owner.parent
    if not isinstance(node, cst.ClassDef) or parent is None:
        return False
    return any(facts.bindings.qualname(base.value, parent) in LIGHTNING_MODULES for base in node.bases)


def manual_optimization(facts: Any, owner: Scope) -> bool:
    """The class turns automatic optimization off, or its value is not a literal True."""
    for assignment in facts.assignments_to("self.automatic_optimization"):
        if assignment.ctx.scope.class_scope is owner:
            return True  # any assignment: stay silent unless it is left at Lightning's default
    return any(
        isinstance(stmt, cst.FunctionDef) and stmt.name.value == "automatic_optimization"
        for stmt in owner.node.body.body
    )


def lightning_fit_precision(facts: Any, class_name: str) -> tuple[int, str] | None:
    """The line and mixed precision (``"16-mixed"``/``"bf16-mixed"``) of the Lightning
    ``Trainer`` that every assignment of a ``trainer.fit(model)``'s receiver builds, where
    ``model`` is built from ``class_name``; ``None`` when no such fit is in the file or its
    precision is not one literal mixed value."""
    for fit in facts.calls:
        func = fit.node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "fit" and isinstance(func.value, cst.Name)):
            continue
        model = S.argument(fit.node, 0, "model")
        if isinstance(model, cst.Name):
            built = facts.values.assigned_alternatives(model.value, fit.ctx.scope)
            model = built[0][1] if len(built) == 1 else None
        if not (isinstance(model, cst.Call) and S.dotted(model.func) == class_name):
            continue
        trainers = facts.values.assigned_alternatives(func.value.value, fit.ctx.scope)
        precisions = set()
        for assignment, value in trainers:
            is_trainer = isinstance(value, cst.Call) and facts.bindings.qualname(value.func, assignment.ctx.scope) in LIGHTNING_TRAINERS
            precisions.add(_mixed_lightning_precision(S.keyword_arg_value(value, "precision")) if is_trainer else None)
        if trainers and len(precisions) == 1 and None not in precisions:
            return facts.position(trainers[0][0].value).start.line, precisions.pop()
    return None


def _mixed_lightning_precision(value: cst.BaseExpression | None) -> str | None:
    """``"16-mixed"`` / ``"bf16-mixed"`` for a literal mixed ``precision=``, the legacy ``16``,
    ``"16"`` and ``"bf16"`` included (Lightning 2 maps them to these); ``None`` otherwise."""
    if isinstance(value, cst.Integer):
        return "16-mixed" if value.value == "16" else None
    text = S.string_value(value) if value is not None else None
    if text in ("16-mixed", "bf16-mixed"):
        return text
    return LEGACY_PRECISIONS.get(text or "")

