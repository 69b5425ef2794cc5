from __future__ import annotations

from textwrap import dedent
from typing import Iterator

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
                with torch.autocast('cuda', dtype=torch.float32):
                    pass
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
                from torch.cuda.amp import autocast
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
        for autocast in facts.autocast_calls:
            region = autocast.region
            node = region.dtype_node
            if node is None or region.enabled is False:
                continue
            dtype = _UNSUPPORTED.get(facts.qualname(node, autocast.site.ctx.scope) or "")
            if dtype is None:
                continue
            short = dtype.split(".")[-1]
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
