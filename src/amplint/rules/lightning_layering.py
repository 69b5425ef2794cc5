"""AMP024's Lightning half: a manual loss scale or an autocast written inside the
``training_step`` of a LightningModule whose Trainer already runs mixed precision.

Lightning 2.6.6 runs ``training_step`` inside the precision plugin's autocast
(``strategies/strategy.py:388``, ``plugins/precision/amp.py:114-122``) and, under automatic
optimization, runs the backward of the returned loss itself (``loops/optimization/automatic.py:240-241``)
through the plugin's own GradScaler with ``"16-mixed"`` (``plugins/precision/amp.py:54``).
"""

from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from amplint.amp.events import Event
from amplint.amp.framework_configs import is_lightning_module, lightning_fit_precision, manual_optimization
from amplint.amp.frameworks import LIGHTNING_FABRICS
import amplint.semantic.syntax as S


def findings(facts: Any, scales: list[Event]) -> Iterator[tuple[cst.CSTNode, str]]:
    """Each reported node with its message: the manual scales first, then the autocasts."""
    yield from _scales_in_automatic_steps(facts, scales)
    yield from _autocasts_under_mixed_trainer(facts)


def _scales_in_automatic_steps(facts: Any, scales: list[Event]) -> Iterator[tuple[cst.CSTNode, str]]:
    # Fabric calls no ``training_step`` itself: a script that drives a LightningModule with
    # Fabric runs its own backward (``fabric.backward``).
    if facts.call_index.calls_to(LIGHTNING_FABRICS):
        return
    for scale in scales:
        scope = scale.ctx.scope
        if scope.kind != "function" or scope.name != "training_step":
            continue
        owner = scope.class_scope
        if owner is None or not is_lightning_module(facts, owner) or manual_optimization(facts, owner):
            continue
        if not any(c.scope is scope and value is not None and not S.is_none(value) for value, c in facts.records.returns):
            continue  # returning nothing makes Lightning skip its own backward for the batch
        yield scale.call, (
            "This LightningModule keeps automatic optimization on: Lightning runs the backward of the loss "
            "`training_step` returns through its precision plugin (which scales it itself with \"16-mixed\") and "
            "steps the optimizer; a manual `scaler.scale(...)` here backpropagates a second time. Return the loss "
            "and let the Trainer's `precision=` scale it, or set `self.automatic_optimization = False`"
        )


def _autocasts_under_mixed_trainer(facts: Any) -> Iterator[tuple[cst.CSTNode, str]]:
    """An enabled autocast ``with`` in the ``training_step`` of a LightningModule that a
    ``Trainer`` with a literal mixed ``precision=`` fits in this file."""
    for node, ctx in facts.records.withs:
        scope, owner = ctx.scope, ctx.scope.class_scope
        if scope.kind != "function" or scope.name != "training_step" or owner is None:
            continue
        if not is_lightning_module(facts, owner):
            continue
        fitted = lightning_fit_precision(facts, owner.node.name.value)
        if fitted is None:
            continue
        line, precision = fitted
        plugin_dtype = "bfloat16" if precision == "bf16-mixed" else "float16"
        for region in facts.autocast.autocast_regions.get(node, []):
            if region.call is None or not region.resolved or region.conditional or region.enabled is not True:
                continue
            if region.dtype not in (None, "float16", "bfloat16"):
                continue
            unscaled = region.dtype == "float16" and plugin_dtype == "bfloat16"
            yield region.call, (
                f'The `Trainer` on line {line} runs `precision="{precision}"`: Lightning already runs '
                f"`training_step` inside its own autocast ({plugin_dtype}); this one repeats it"
                + ("; worse, it runs the code in float16, and the bf16 plugin builds no GradScaler to keep "
                   "float16 gradients from underflowing" if unscaled else "")
                + ". Remove it and let the Trainer's `precision=` choose the dtype"
            )
