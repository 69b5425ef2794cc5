from __future__ import annotations

from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.amp.events import TRAINING_KINDS
from amplint.fix import NoFix
from amplint.model import FixSafety
from amplint.rules.base import Invalid, Rule, Violation

# torch dtypes autocast cannot lower precision to, by canonical qualified name.
_UNSUPPORTED = {
    "torch.float32": "torch.float32",
    "torch.float": "torch.float32",
    "torch.float64": "torch.float64",
    "torch.double": "torch.float64",
}


class UnsupportedAutocastDtype(Rule):
    """
    ## What it does
    Finds autocast regions built with a literal `dtype=torch.float32` or `dtype=torch.float64`
    (also spelled `torch.float` / `torch.double`), in every autocast spelling: `torch.autocast`,
    `torch.amp.autocast`, the deprecated `torch.cuda.amp.autocast` / `torch.cpu.amp.autocast`,
    aliases, decorators and `functools.partial`. Regions with a literal `enabled=False` are ignored.

    ## Why is this bad?
    Autocast only lowers precision to `float16` or `bfloat16`. Given `float32`, CPU autocast (and
    every backend but CUDA) warns "target dtype is not supported" and silently disables itself; CUDA
    autocast stays on but casts eligible ops to `float32`. Either way nothing runs in mixed
    precision, so a run that was meant to be faster is not, and the warning is easy to miss in logs.
    Code that wants a float32 island inside an autocast region should say so with `enabled=False`.

    An always-on CUDA region with `dtype=torch.float32` outside the training step
    (`torch.cuda.amp.autocast(dtype=torch.float32)`, `torch.autocast("cuda", dtype=torch.float32)`,
    or a device type tested to be `"cuda"` around it, with no `enabled=` flag, no backward or step
    inside and not in a training loop) is not reported: CUDA autocast then up-casts eligible ops to
    float32 even when their inputs are float16, which is what a "force float32 inside autocast"
    helper wants and what `enabled=False` does not do.

    ## Example
    ```python
    import torch

    def evaluate(model, loader):
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.float32):
            return [model(x) for x in loader]
    ```

    ## Use instead
    ```python
    import torch

    def evaluate(model, loader):
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            return [model(x) for x in loader]
    ```

    ## Fix safety
    There is no fix: whether `float16`/`bfloat16` (mixed precision) or `enabled=False` (a float32
    region) was meant is the author's decision. Only literal dtypes are reported; a dtype chosen at
    run time (`dtype=amp_dtype`) is not.

    ## References
    - [Automatic Mixed Precision package - torch.amp](https://pytorch.org/docs/stable/amp.html)
    - [CPU ops that can autocast](https://pytorch.org/docs/stable/amp.html#cpu-ops-that-can-autocast-to-bfloat16)
    """

    code = "AMP018"
    name = "unsupported-autocast-dtype"
    summary = "autocast with `dtype=torch.float32`/`float64` runs nothing in reduced precision"
    fix_safety = FixSafety.NONE
    triggers = ("autocast",)

    valid = (
        dedent("""\
            import torch
            with torch.autocast('cuda', dtype=torch.bfloat16):
                pass
        """),
        dedent("""\
            import torch
            with torch.autocast('cpu', dtype=torch.float32, enabled=False):
                pass
        """),
        dedent("""\
            import torch
            with torch.cpu.amp.autocast(dtype=torch.float16):
                pass
        """),
        # a float32 island: CUDA autocast up-casts eligible ops inside an fp16 region
        dedent("""\
            import torch
            def force_float32():
                if torch.is_autocast_enabled("cuda"):
                    return torch.autocast("cuda", dtype=torch.float32)
                return contextlib.nullcontext()
        """),
        dedent("""\
            import torch
            def f(dtype):
                with torch.autocast('cuda', dtype=dtype):
                    pass
        """),
        dedent("""\
            import numpy as np
            import torch
            with torch.autocast('cuda', dtype=np.float32):
                pass
        """),
    )
    invalid = (
        Invalid(
            dedent("""\
                import torch
                for x, y in loader:
                    with torch.autocast('cuda', dtype=torch.float32):
                        loss = model(x, y)
                    loss.backward()
                    opt.step()
            """),
        ),
        Invalid(
            dedent("""\
                import torch
                with torch.autocast('cpu', torch.double):
                    pass
            """),
        ),
        Invalid(
            dedent("""\
                import torch
                from torch.cpu.amp import autocast
                @autocast(True, torch.float32)
                def f():
                    pass
            """),
        ),
        Invalid(
            dedent("""\
                import functools
                import torch
                ctx = functools.partial(torch.autocast, 'cuda', dtype=torch.float64)
            """),
        ),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        for autocast in facts.autocast.autocast_calls:
            region = autocast.region
            node = region.dtype_node
            if node is None or region.enabled is False:
                continue
            dtype = _UNSUPPORTED.get(facts.bindings.qualname(node, autocast.site.ctx.scope) or "")
            if dtype is None:
                continue
            short = dtype.split(".")[-1]
            if dtype == "torch.float32" and self._float32_island(region, autocast.site):
                continue
            if region.device == "cuda":
                effect = f"CUDA autocast casts ops to {short} instead, so nothing runs in mixed precision"
            elif region.device is not None:
                effect = f"{region.device.upper()} autocast warns that the dtype is not supported and disables itself"
            else:
                effect = f"CPU and most backends warn and disable autocast, CUDA casts ops to {short}"
            yield self.violation(
                node,
                f"autocast with `dtype={dtype}` runs nothing in reduced precision: autocast only lowers to "
                f"float16/bfloat16 ({effect}); use `torch.float16`/`torch.bfloat16` for mixed precision, "
                f"or `enabled=False` for a {short} region",
                fix=NoFix("choose float16/bfloat16 or enabled=False by hand"),
            )

    def _float32_island(self, region, site) -> bool:
        """An always-on CUDA float32 region outside the training step: CUDA autocast up-casts
        eligible ops to float32 there, as a "force float32 inside autocast" helper wants."""
        facts = self.facts
        if region.enabled is not True or not self._on_cuda(region, site):
            return False
        if any(loop in facts.training.training_loops for loop in site.ctx.loops):
            return False
        return not any(e.kind in TRAINING_KINDS and facts.tree.contains(region.node, e.call) for e in facts.timeline.events)

    def _on_cuda(self, region, site) -> bool:
        """The region's device is CUDA: a literal, the deprecated ``torch.cuda.amp`` spelling, or
        ``device_type=x.device.type`` under ``if x.device.type == "cuda":``."""
        if region.device == "cuda" or region.deprecated == "cuda":
            return True
        if region.device_node is None:
            return False
        device = self.facts.code(region.device_node).strip()
        for branch in site.ctx.branches:
            if isinstance(branch.node, cst.If) and branch.part == "body":
                test = self.facts.code(branch.node.test)
                if f'{device} == "cuda"' in test or f"{device} == 'cuda'" in test:
                    return True
        return False
