from __future__ import annotations

from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.amp.events import EventKind, SCALER_KINDS
from amplint.fix import NoFix
from amplint.model import FixSafety
from amplint.rules.base import Rule, Violation
from amplint.semantic.records import CallSite
import amplint.semantic.syntax as S

# FSDP1's ``MixedPrecision`` (torch 2.13 ``torch/distributed/fsdp/api.py``) and FSDP2's
# ``MixedPrecisionPolicy`` (``torch/distributed/fsdp/_fully_shard/_fsdp_api.py``), in the
# spellings they are exported under. Both take ``param_dtype`` first.
_POLICIES = frozenset({
    "torch.distributed.fsdp.MixedPrecision",
    "torch.distributed.fsdp.api.MixedPrecision",
    "torch.distributed.fsdp.fully_sharded_data_parallel.MixedPrecision",
    "torch.distributed.fsdp.MixedPrecisionPolicy",
    "torch.distributed._composable.fsdp.MixedPrecisionPolicy",
    "torch.distributed.fsdp._fully_shard.MixedPrecisionPolicy",
    "torch.distributed.fsdp._fully_shard._fsdp_api.MixedPrecisionPolicy",
})
_FSDP_WRAPS = frozenset({
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_shard",
    "torch.distributed._composable.fsdp.fully_shard",
    "torch.distributed._composable.fsdp.fully_shard.fully_shard",
})
# ``FullyShardedDataParallel(..., mixed_precision=...)``, ``fully_shard(..., mp_policy=...)``.
_POLICY_KEYWORDS = ("mixed_precision", "mp_policy")


class FsdpFp16WithoutScaler(Rule):
    """
    ## What it does
    Finds an FSDP mixed-precision policy that computes in float16,
    `MixedPrecision(param_dtype=torch.float16)` (FSDP1) or
    `MixedPrecisionPolicy(param_dtype=torch.float16)` (FSDP2), passed to
    `FullyShardedDataParallel(..., mixed_precision=...)` or `fully_shard(..., mp_policy=...)` in a
    file that trains with a plain `loss.backward()` and has no loss scaler at all: no
    `GradScaler` or `ShardedGradScaler` built, no `scaler.scale(...)`, and no name containing
    `scaler`.

    The rule is silent for a `param_dtype` that is not a literal (`torch.bfloat16`, a dtype
    chosen at run time), for a policy that no FSDP wrap in the file receives, and for a file
    that does not call `.backward()` (a scaler may be passed in from elsewhere).

    ## Why is this bad?
    With `param_dtype=torch.float16` FSDP runs the forward and backward on float16 copies of the
    parameters, so the gradients are computed in float16, as under `torch.autocast` with
    float16. Gradients below float16's smallest subnormal (about 6e-8) flush to zero and large
    ones overflow to inf, and without a scaler nothing scales them into range or skips the step
    that overflowed. FSDP's mixed precision does no loss scaling of its own: the torch docs pair it
    with `ShardedGradScaler`. Reproduced on CPU with gloo in
    `tests/test_amp026_fsdp_runtime.py`: a gradient of 1e-8 leaves the model unchanged without a
    scaler and trains it with `ShardedGradScaler`.

    ## Example
    ```python
    import torch
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision

    policy = MixedPrecision(param_dtype=torch.float16, reduce_dtype=torch.float16)
    model = FSDP(model, mixed_precision=policy)
    for batch in loader:
        loss = model(batch).loss
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    import torch
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision
    from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

    policy = MixedPrecision(param_dtype=torch.float16, reduce_dtype=torch.float16)
    model = FSDP(model, mixed_precision=policy)
    scaler = ShardedGradScaler()
    for batch in loader:
        loss = model(batch).loss
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Fix safety
    There is no fix: adding a scaler changes the backward, the step and the checkpoint, and
    `param_dtype=torch.bfloat16` needs hardware that supports it.

    ## References
    - [FSDP: MixedPrecision](https://pytorch.org/docs/stable/fsdp.html#torch.distributed.fsdp.MixedPrecision)
    - torch 2.13 `torch/distributed/fsdp/api.py` (`MixedPrecision`: "param_dtype ... the dtype
      for ... forward and backward computation"), `torch/distributed/fsdp/sharded_grad_scaler.py`
      (`ShardedGradScaler`)
    """

    code = "AMP026"
    name = "fsdp-fp16-without-scaler"
    summary = "FSDP `MixedPrecision(param_dtype=torch.float16)` training with no loss scaler"
    fix_safety = FixSafety.NONE
    triggers = ("MixedPrecision",)
    requires = ("backward",)

    valid = (
        dedent("""\
        import torch
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision
        from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler
        model = FSDP(model, mixed_precision=MixedPrecision(param_dtype=torch.float16))
        scaler = ShardedGradScaler()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        """),
        dedent("""\
        import torch
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision
        model = FSDP(model, mixed_precision=MixedPrecision(param_dtype=torch.bfloat16))
        loss.backward()
        """),
        # A scaler handed in from elsewhere.
        dedent("""\
        import torch
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision

        def train(model, loss, optimizer, scaler):
            model = FSDP(model, mixed_precision=MixedPrecision(param_dtype=torch.float16))
            if scaler is None:
                loss.backward()
        """),
    )
    invalid = (
        dedent("""\
        import torch
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision
        policy = MixedPrecision(param_dtype=torch.float16, reduce_dtype=torch.float16)
        model = FSDP(model, mixed_precision=policy)
        for batch in loader:
            model(batch).loss.backward()
            optimizer.step()
        """),
        dedent("""\
        import torch
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        def main(model, loader, optimizer):
            fully_shard(model, mp_policy=MixedPrecisionPolicy(torch.half))
            for batch in loader:
                model(batch).sum().backward()
                optimizer.step()
        """),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        policies = [s for s in facts.call_index.calls_to(_POLICIES) if self._computes_in_fp16(s)]
        if not policies or not self._trains_without_scaler():
            return
        wraps = facts.call_index.calls_to(_FSDP_WRAPS)
        for policy in policies:
            wrap = next((w for w in wraps if self._receives(w, policy)), None)
            if wrap is None or facts.frameworks.expects_failure(policy.ctx):
                continue
            line = facts.position(wrap.node).start.line
            yield self.violation(policy.node, (
                f"FSDP (line {line}) computes in float16 with this policy and the file trains with a plain "
                "`.backward()` and no loss scaler: float16 gradients below ~6e-8 flush to zero and large ones "
                "overflow, with nothing to scale them into range or skip the step; use "
                "`torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler` or `param_dtype=torch.bfloat16`"
            ), fix=NoFix("add a `ShardedGradScaler` around the backward and the step"))

    def _computes_in_fp16(self, site: CallSite) -> bool:
        value = S.argument(site.node, 0, "param_dtype")
        return self.facts.autocast.dtype_name(value) == "float16"

    def _trains_without_scaler(self) -> bool:
        facts = self.facts
        events = facts.timeline.events
        if not any(e.kind is EventKind.BACKWARD for e in events):
            return False
        if any(e.kind in SCALER_KINDS or e.kind is EventKind.SCALE for e in events):
            return False
        if facts.scaling.scaler_construction_sites:
            return False
        return not any("scaler" in (ref.parts[-1] or "").lower() or "scaler" in ref.parts[0].lower()
                       for ref in facts.records.references)

    def _receives(self, wrap: CallSite, policy: CallSite) -> bool:
        """``wrap`` is passed ``policy``: the call itself, or a name assigned it."""
        for keyword in _POLICY_KEYWORDS:
            value = S.keyword_arg_value(wrap.node, keyword)
            if value is None:
                continue
            if value is policy.node:
                return True
            if isinstance(value, cst.Name):
                assigned = self.facts.values.assigned_alternatives(value.value, wrap.ctx.scope, booleans=False)
                if assigned and all(node is policy.node for _, node in assigned):
                    return True
        return False
