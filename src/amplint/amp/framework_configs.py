"""Framework settings read from the code: a DeepSpeed config dict's precision, whether a
LightningModule leaves Lightning's automatic optimization on, and the mixed precision of the
Lightning ``Trainer`` that fits it."""

from __future__ import annotations

from typing import Any

import libcst as cst

import amplint.semantic.syntax as S
from amplint.amp.frameworks import LEGACY_PRECISIONS, LIGHTNING_TRAINERS
from amplint.semantic.records import Context, Scope

DEEPSPEED_INITIALIZE = frozenset({"deepspeed.initialize"})
# ``deepspeed.initialize(..., config=None, ..., config_params=None)``: the two keywords that
# carry the config (deepspeed/__init__.py, ``initialize``).
_DEEPSPEED_CONFIG_KEYWORDS = ("config", "config_params")
LIGHTNING_MODULES = frozenset({
    "lightning.LightningModule", "lightning.pytorch.LightningModule", "lightning.pytorch.core.LightningModule",
    "lightning.pytorch.core.module.LightningModule", "pytorch_lightning.LightningModule",
    "pytorch_lightning.core.LightningModule", "pytorch_lightning.core.module.LightningModule",
})


def deepspeed_precision(facts: Any, call: cst.Call, ctx: Context) -> str | None:
    """``"fp16"``/``"bf16"`` when the ``config=`` dict literal (or the one dict a name is
    assigned) enables it; ``None`` when neither is enabled or the config is not known."""
    value = next((S.keyword_arg_value(call, k) for k in _DEEPSPEED_CONFIG_KEYWORDS if S.keyword_arg(call, k) is not None), None)
    if isinstance(value, cst.Name):
        assigned = facts.values.assigned_alternatives(value.value, ctx.scope, booleans=False)
        if len(assigned) != 1:
            return None
        value = assigned[0][1]
    if not isinstance(value, cst.Dict):
        return None
    for precision in ("fp16", "bf16"):
        section = _dict_entry(value, precision)
        if isinstance(section, cst.Dict) and S.bool_value(_dict_entry(section, "enabled")) is True:
            return precision
    return None


def deepspeed_initializations(facts: Any) -> list[tuple[Any, tuple[str, ...]]]:
    """Each ``deepspeed.initialize(...)`` call with the names it is unpacked into
    (``engine, optimizer, _, _ = ...``; deepspeed/__init__.py returns engine, optimizer,
    dataloader, lr_scheduler); ``()`` when its result is not unpacked into names."""
    out = []
    for site in facts.call_index.calls_to(DEEPSPEED_INITIALIZE):
        targets: tuple[str, ...] = ()
        for assignment in facts.assignments_in(site.ctx.scope):
            if assignment.value is site.node and assignment.targets:
                targets = assignment.targets
                break
        out.append((site, targets))
    return out


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


def _dict_entry(node: cst.Dict, key: str) -> cst.BaseExpression | None:
    return next((value for k, value, _ in S.dict_items(node) or () if k == key), None)
