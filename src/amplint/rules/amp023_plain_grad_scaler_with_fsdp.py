from __future__ import annotations

from textwrap import dedent
from typing import Iterator

from amplint.amp.scalers import built_disabled
from amplint.fix import NoFix
from amplint.model import FixSafety
from amplint.rules.base import Rule, Violation
from amplint.semantic.records import CallSite

# FSDP1's wrapper class and FSDP2's ``fully_shard`` (torch 2.13: ``torch.distributed.fsdp``
# exports both; the composable spelling is the older home of ``fully_shard``).
_FSDP_WRAPS = frozenset({
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_shard",
    "torch.distributed._composable.fsdp.fully_shard",
    "torch.distributed._composable.fsdp.fully_shard.fully_shard",
})
_SHARDED = "torch.distributed.fsdp.ShardedGradScaler"


class PlainGradScalerWithFsdp(Rule):
    """
    ## What it does
    Finds a plain `GradScaler` (`torch.amp.GradScaler`, `torch.cuda.amp.GradScaler`) built in the
    same function (or class) that shards a model with FSDP: `FullyShardedDataParallel(...)` or
    FSDP2's `fully_shard(...)`, when both can run in one pass (not two arms of one `if`). A scaler
    built with `enabled=False` is not reported, and neither is a file that also builds a
    `ShardedGradScaler` (the plain one is then the non-FSDP arm).

    ## Why is this bad?
    Under FSDP each rank holds the gradients of its own shard only. A plain GradScaler checks
    those for inf/NaN on its own rank: an overflow in one rank's shard makes that rank skip its
    step and halve its scale while the others step and keep theirs. From then on the ranks scale
    their losses differently, FSDP's reduce-scatter averages gradients carrying different
    scales, and each rank unscales the mix with its own scale: the model trains on wrong
    gradients with nothing failing. `ShardedGradScaler.unscale_` all-reduces the inf flag across
    the process group so that every rank skips the same steps and keeps the same scale (torch
    `distributed/fsdp/sharded_grad_scaler.py`, `unscale_`: "Synchronize the detected inf across
    the ranks"). Data-parallel DDP needs none of this: its gradients are all-reduced before
    the scaler sees them, so every rank finds the same infs.

    ## Example
    ```python
    import torch
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    model = FSDP(model, device_id=local_rank)
    optimizer = torch.optim.AdamW(model.parameters())
    scaler = torch.amp.GradScaler("cuda")
    ```

    ## Use instead
    ```python
    import torch
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

    model = FSDP(model, device_id=local_rank)
    optimizer = torch.optim.AdamW(model.parameters())
    scaler = ShardedGradScaler()
    ```

    ## Fix safety
    There is no fix. `ShardedGradScaler` takes its arguments in another order
    (`device, init_scale, backoff_factor, growth_factor, ...` against GradScaler's
    `device, init_scale, growth_factor, backoff_factor, ...`), needs an import, and all-reduces on
    every `unscale_`, which fails where no process group is initialised (a single-GPU run of a
    script that shards only when launched distributed).

    ## References
    - [FSDP: mixed precision and ShardedGradScaler](https://pytorch.org/docs/stable/fsdp.html)
    - torch 2.13 `torch/distributed/fsdp/sharded_grad_scaler.py`: `ShardedGradScaler` (class
      docstring: "Sync inf/nan for scaled gradient tensors ... across nodes"), `unscale_`
      (`dist.all_reduce(found_inf, ...)`); `torch/amp/grad_scaler.py`: `GradScaler.unscale_`
      checks the local gradients only
    """

    code = "AMP023"
    name = "plain-grad-scaler-with-fsdp"
    summary = "a plain `GradScaler` with an FSDP-sharded model: each rank finds infs in its own shard only"
    fix_safety = FixSafety.NONE
    # Every spelling of a wrap names one of these (in the import or the call).
    triggers = ("fully_shard", "FullyShardedDataParallel")
    requires = ("GradScaler",)
    focus_tokens = ("GradScaler",)

    valid = (
        dedent("""\
        import torch
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler
        model = FSDP(model)
        scaler = ShardedGradScaler()
        """),
        # DDP: gradients are all-reduced before the scaler looks at them.
        dedent("""\
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(model)
        scaler = torch.amp.GradScaler("cuda")
        """),
        # Two arms of one condition.
        dedent("""\
        import torch
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        def setup(model, args):
            if args.fsdp:
                model = FSDP(model)
                scaler = None
            else:
                scaler = torch.amp.GradScaler("cuda")
            return model, scaler
        """),
        # Disabled: it never scales.
        dedent("""\
        import torch
        from torch.distributed.fsdp import fully_shard
        fully_shard(model)
        scaler = torch.amp.GradScaler("cuda", enabled=False)
        """),
    )
    invalid = (
        dedent("""\
        import torch
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        def main(model, local_rank):
            model = FSDP(model, device_id=local_rank)
            scaler = torch.amp.GradScaler("cuda")
            return model, scaler
        """),
        dedent("""\
        from torch.cuda.amp import GradScaler
        from torch.distributed.fsdp import fully_shard

        class Trainer:
            def __init__(self, model):
                for block in model.layers:
                    fully_shard(block)
                self.model = fully_shard(model)

            def build_scaler(self):
                self.scaler = GradScaler()
        """),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        wraps = facts.call_index.calls_to(_FSDP_WRAPS)
        if not wraps:
            return
        constructions = facts.scaling.scaler_construction_sites
        if any(site.qualname == _SHARDED for site in constructions):
            return
        for scaler in constructions:
            if built_disabled(scaler):
                continue
            wrap = next((w for w in wraps if self._together(w, scaler)), None)
            if wrap is None:
                continue
            line = facts.position(wrap.node).start.line
            yield self.violation(scaler.node, (
                f"This GradScaler serves a model FSDP shards (line {line}): each rank checks only its own shard's "
                "gradients for inf/NaN, so after an overflow the ranks skip different steps and keep different "
                "scales, and the reduce-scattered gradients mix them; use "
                "`torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler`, which syncs the check across ranks"
            ), fix=NoFix("build a `ShardedGradScaler` instead (its arguments come in another order)"))

    def _together(self, wrap: CallSite, scaler: CallSite) -> bool:
        """Both run in one pass of one function, or in methods of one class."""
        a, b = wrap.ctx.scope, scaler.ctx.scope
        if a is b:
            flow = self.facts.control_flow
            return flow.reaches(wrap.ctx, scaler.ctx) or flow.reaches(scaler.ctx, wrap.ctx)
        return a.kind == "function" and b.kind == "function" and a.parent is b.parent and a.parent is not None \
            and a.parent.kind == "class"
