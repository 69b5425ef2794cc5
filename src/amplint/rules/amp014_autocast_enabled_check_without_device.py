from __future__ import annotations

from textwrap import dedent
from typing import Iterator

from amplint.fix import Fix, NoFix
import amplint.fix.edits as E
from amplint.model import FixSafety
from amplint.rules.base import Invalid, Rule, Violation
from amplint.semantic import Scope
import amplint.semantic.syntax as S


# Calls that only concern CUDA autocast: a function that makes them with a device-less
# ``is_autocast_enabled()`` means CUDA (unless it also reads the CPU autocast dtype).
_CUDA_ONLY_CALLS = frozenset({"torch.get_autocast_gpu_dtype", "torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast"})
# float16 written out: CUDA autocast's dtype (CPU autocast runs in bfloat16 unless told otherwise).
_FLOAT16_NAMES = frozenset({"torch.float16", "torch.half", "torch.HalfTensor", "torch.cuda.HalfTensor"})


class AutocastEnabledCheckWithoutDevice(Rule):
    """
    ## What it does
    Finds `torch.is_autocast_enabled()` called without a device type.

    Not reported where the CUDA-only answer is evidently meant: code that runs only on CUDA (an
    `if x.is_cuda:` arm, a CUDA autocast region, the `forward`/`backward` of an autograd Function
    decorated for CUDA autocast with `@torch.cuda.amp.custom_fwd` or
    `@torch.amp.custom_fwd(device_type="cuda")`, whose decorator reads CUDA's autocast state
    itself), a function that asks about CPU autocast separately (`torch.is_autocast_cpu_enabled()`),
    or a check whose own statement (the `if` and its body) reads only the GPU autocast dtype, opens
    a `torch.cuda.amp.autocast` region, or casts only to a hard-coded float16 (`.half()`,
    `.to(torch.float16)`: CUDA autocast's dtype, a wrong one under CPU autocast's bfloat16), and
    does not also read the CPU dtype.

    ## Why is this bad?
    Without an argument `torch.is_autocast_enabled()` reports the state of **CUDA** autocast only. Code
    that runs under `torch.autocast("cpu")` (or another device) reads `False` and silently takes the
    "autocast is off" path: a custom op skips its casts, a norm layer runs in the wrong dtype. The
    device-less form is a leftover of the per-device API (`torch.is_autocast_cpu_enabled()`), which
    `torch.is_autocast_enabled(device_type)` replaced.

    ## Example
    ```python
    import torch

    def cast_if_autocast_enabled(tensor):
        if torch.is_autocast_enabled():
            return tensor.to(torch.get_autocast_dtype(tensor.device.type))
        return tensor
    ```

    ## Use instead
    ```python
    import torch

    def cast_if_autocast_enabled(tensor):
        if torch.is_autocast_enabled(tensor.device.type):
            return tensor.to(torch.get_autocast_dtype(tensor.device.type))
        return tensor
    ```

    ## Fix safety
    The fix passes `"cuda"`, which is exactly what the call checks today, so behaviour is unchanged and
    the device becomes visible; the message says when a device type (a `device_type` parameter, the
    device of the function's own autocast region) is in scope, since that, or `"cpu"`, may be what was
    meant. Calls are skipped where CUDA is the evident intent (inside `if device == "cuda":` or a CUDA
    autocast region) and in version fallbacks (`except TypeError:` after trying the device form).
    TorchScript rejects the device argument: functions decorated with `@torch.jit.script` are skipped,
    and in files that script code the call is reported without a fix. So is a call in a project whose
    `target-torch` (set, or inferred from its `torch>=` requirement) is below 2.4, whose
    `torch.is_autocast_enabled` takes no device argument.

    ## References
    - [Automatic Mixed Precision package - torch.amp](https://pytorch.org/docs/stable/amp.html)
    - [Autocasting](https://pytorch.org/docs/stable/amp.html#autocasting)
    """

    code = "AMP014"
    name = "autocast-enabled-check-without-device"
    summary = "`torch.is_autocast_enabled()` without a device type checks CUDA only"
    fix_safety = FixSafety.SAFE
    fix_withheld = "in a file that uses TorchScript, or below the `target-torch` 2.4 that takes the device"
    triggers = ("is_autocast_enabled",)
    # the fix depends on whether the file scripts anything (TorchScript rejects the device argument)
    focus_tokens = ("jit", "script")

    valid = (
        dedent("""\
            import torch
            enabled = torch.is_autocast_enabled('cpu')
        """),
        dedent("""\
            import torch
            def f(x):
                if x.device.type == 'cuda':
                    return torch.is_autocast_enabled()
        """),
        dedent("""\
            import torch
            def f(device):
                try:
                    return torch.is_autocast_enabled(device)
                except TypeError:
                    return torch.is_autocast_enabled()
        """),
        dedent("""\
            def is_autocast_enabled():
                return False
            is_autocast_enabled()
        """),
        dedent("""\
            import torch
            @torch.jit.script
            def f(x):
                if torch.is_autocast_enabled():
                    return x
                return x
        """),
    )
    invalid = (
        Invalid(
            dedent("""\
                import torch
                enabled = torch.is_autocast_enabled()
            """),
            fixed=dedent("""\
                import torch
                enabled = torch.is_autocast_enabled("cuda")
            """),
        ),
        Invalid(
            dedent("""\
                from torch import is_autocast_enabled
                def f(device_type, x):
                    if not is_autocast_enabled():
                        return x
                    return x.half()
            """),
            fixed=dedent("""\
                from torch import is_autocast_enabled
                def f(device_type, x):
                    if not is_autocast_enabled("cuda"):
                        return x
                    return x.half()
            """),
        ),
        Invalid(
            dedent("""\
                import torch
                def f(x):
                    return torch.is_autocast_enabled()
                g = torch.jit.script(f)
            """),
        ),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        for site in facts.devices.autocast_state_checks:
            if site.node.args or site.in_decorator:
                continue
            function = facts.callgraph.function_of(site.ctx.scope)
            if function is not None and facts.torchscript.is_scripted(function):
                continue  # TorchScript rejects the device argument
            if facts.devices.runs_on_cuda_evidently(site) or facts.devices.device_check_fallback(site) or self._cuda_meant(site):
                continue
            message = (
                "`torch.is_autocast_enabled()` without a device type reports CUDA autocast only (it reads "
                'False under CPU autocast); pass "cuda" to keep this behaviour, or "cpu"/the device type you mean'
            )
            hint = self._device_hint(site.ctx.scope)
            if hint is not None:
                message += f"; {hint}"
            too_old = facts.compat.torch_too_old_for((2, 4))  # the device argument came with torch 2.4
            if facts.torchscript.uses_torchscript:
                fix = NoFix("this file uses TorchScript, which rejects the device argument")
            elif too_old is not None:
                fix = NoFix(too_old)
            else:
                fix = Fix.safe('Pass `"cuda"`', {site.node: site.node.with_changes(args=[E.positional(E.string_literal("cuda"))])})
            yield self.violation(site.node, message, fix=fix)

    def _cuda_meant(self, site) -> bool:
        """The function asks about CPU autocast separately (``is_autocast_cpu_enabled()``), or the
        check's own statement (an ``if`` with its body) reads only the GPU autocast dtype or opens
        a CUDA region: the CUDA-only answer is meant."""
        facts = self.facts
        names = {s.qualname for s in facts.callgraph.calls_by_scope.get(site.ctx.scope, [])}
        cpu_checks = [
            s for s in facts.devices.autocast_state_checks
            if s.ctx.scope is site.ctx.scope and S.string_value(S.argument(s.node, 0, "device_type")) == "cpu"
        ]
        if "torch.is_autocast_cpu_enabled" in names or cpu_checks:
            return True
        stmt = site.ctx.stmt
        if stmt is None:
            return False
        guarded = {s.qualname for s in facts.calls_within(stmt)}
        # ``fp16 = torch.get_autocast_gpu_dtype() == torch.float16`` read by the check's statement
        for name in {ref.parts[0] for ref in facts.references_within(stmt)}:
            for assignment in facts.assignments_to(name, site.ctx.scope):
                if assignment.value is not None and facts.control_flow.reaches(assignment.ctx, site.ctx):
                    guarded |= {s.qualname for s in facts.calls_within(assignment.value)}
        if "torch.get_autocast_cpu_dtype" in guarded:
            return False
        return bool(guarded & _CUDA_ONLY_CALLS) or self._casts_to_float16(stmt, site.ctx.scope)

    def _casts_to_float16(self, stmt: cst.CSTNode, scope: Scope) -> bool:
        """The check's statement casts to a hard-coded float16 (``.half()``, ``.to(torch.float16)``),
        CUDA autocast's dtype, and to nothing else: under CPU autocast (bfloat16) that cast would
        be wrong, so the CUDA-only answer is the one meant."""
        facts = self.facts
        casts = [cast for cast in facts.casts.half_casts if facts.tree.within(cast.call, stmt)]
        return bool(casts) and all(
            cast.dtype == "float16"
            and all(facts.bindings.qualname(arg.value, scope) in _FLOAT16_NAMES for arg in cast.dtype_args)
            for cast in casts
        )

    def _device_hint(self, scope: Scope) -> str | None:
        """What to tell the user about the device type the function has at hand, if any."""
        found = self.facts.devices.device_type_at_hand(scope)
        if found is None:
            return None
        how, node = found
        if how == "parameter":
            return "this function takes `device_type`: pass it if that is the device meant"
        if how == "autocast":
            return f"this function autocasts on `{self.facts.code(node)}`: pass that if it is the device meant"
        return "this function sets `device_type`: pass it if that is the device meant"
