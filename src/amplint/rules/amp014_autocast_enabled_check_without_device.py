from __future__ import annotations

from typing import Iterator

import libcst as cst

from amplint.semantic import syntax as S
from amplint.semantic import Branch, CallSite, FunctionInfo
from amplint.fix import Fix, NoFix
from amplint.model import FixSafety
from amplint.rules.base import Invalid, Rule, Violation

_CHECK = "torch.is_autocast_enabled"
_JIT = frozenset({"torch.jit.script", "torch.jit.script_method", "torch.jit.interface"})


def _is_cuda_literal(node: cst.CSTNode) -> bool:
    return S.string_value(node) == "cuda"


def _cuda_test(test: cst.BaseExpression) -> str | None:
    """``"body"`` when an ``if`` test proves the device is CUDA in its body, ``"orelse"`` when it proves
    it in its ``else`` (``x != "cuda"``), ``None`` otherwise. ``and`` chains count for the body."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        if _cuda_test(test.left) == "body" or _cuda_test(test.right) == "body":
            return "body"
        return None
    if isinstance(test, cst.Attribute) and test.attr.value == "is_cuda":
        return "body"
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        sides = (test.left, target.comparator)
        if not any(_is_cuda_literal(side) for side in sides):
            return None
        if isinstance(target.operator, (cst.Equal, cst.Is)):
            return "body"
        if isinstance(target.operator, (cst.NotEqual, cst.IsNot)):
            return "orelse"
    return None


class AutocastEnabledCheckWithoutDevice(Rule):
    """
    ## What it does
    Finds `torch.is_autocast_enabled()` called without a device type.

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
    and in files that script code the call is reported without a fix.

    ## References
    - [Automatic Mixed Precision package - torch.amp](https://pytorch.org/docs/stable/amp.html)
    - [Autocasting](https://pytorch.org/docs/stable/amp.html#autocasting)
    """

    code = "AMP014"
    name = "autocast-enabled-check-without-device"
    summary = "`torch.is_autocast_enabled()` without a device type checks CUDA only"
    fix_safety = FixSafety.SAFE
    triggers = ("is_autocast_enabled",)

    valid = (
        "import torch\nenabled = torch.is_autocast_enabled('cpu')\n",
        "import torch\ndef f(x):\n    if x.device.type == 'cuda':\n        return torch.is_autocast_enabled()\n",
        "import torch\ndef f(device):\n    try:\n        return torch.is_autocast_enabled(device)\n"
        "    except TypeError:\n        return torch.is_autocast_enabled()\n",
        "def is_autocast_enabled():\n    return False\nis_autocast_enabled()\n",
        "import torch\n@torch.jit.script\ndef f(x):\n    if torch.is_autocast_enabled():\n        return x\n    return x\n",
    )
    invalid = (
        Invalid(
            "import torch\nenabled = torch.is_autocast_enabled()\n",
            fixed='import torch\nenabled = torch.is_autocast_enabled("cuda")\n',
        ),
        Invalid(
            "from torch import is_autocast_enabled\ndef f(device_type, x):\n    if not is_autocast_enabled():\n"
            "        return x\n    return x.half()\n",
            fixed='from torch import is_autocast_enabled\ndef f(device_type, x):\n    if not is_autocast_enabled("cuda"):\n'
            "        return x\n    return x.half()\n",
        ),
        Invalid(
            "import torch\ndef f(x):\n    return torch.is_autocast_enabled()\ng = torch.jit.script(f)\n",
        ),
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        checks = [s for s in facts.calls if s.qualname == _CHECK]
        if not any(not s.node.args for s in checks):
            return
        scripting = any(s.qualname in _JIT for s in facts.calls) or any(
            facts.qualname(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator, f.ctx.scope) in _JIT
            for f in facts.functions
            for d in f.node.decorators
        )
        for site in checks:
            if site.node.args or site.in_decorator:
                continue
            function = facts.function_of(site.ctx.scope)
            if function is not None and self._scripted(function):
                continue
            if self._cuda_is_evident(site) or self._version_fallback(site, checks):
                continue
            message = (
                "`torch.is_autocast_enabled()` without a device type reports CUDA autocast only (it reads "
                'False under CPU autocast); pass "cuda" to keep this behaviour, or "cpu"/the device type you mean'
            )
            hint = self._device_in_scope(site, function)
            if hint is not None:
                message += f"; {hint}"
            if scripting:
                yield self.violation(
                    site.node,
                    message,
                    fix=NoFix("this file uses TorchScript, which rejects the device argument"),
                )
                continue
            new = site.node.with_changes(args=[cst.Arg(value=cst.SimpleString('"cuda"'))])
            yield self.violation(site.node, message, fix=Fix.safe('Pass `"cuda"`', {site.node: new}))

    # -- when the device-less call is intended
    def _scripted(self, function: FunctionInfo) -> bool:
        for decorator in function.node.decorators:
            expr = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
            if self.facts.qualname(expr, function.ctx.scope) in _JIT:
                return True
        return False

    def _cuda_is_evident(self, site: CallSite) -> bool:
        stmt = site.ctx.stmt
        if isinstance(stmt, (cst.If, cst.While)) and _cuda_test(stmt.test) == "body":
            return True  # ``if x.is_cuda and torch.is_autocast_enabled():``
        for branch in site.ctx.branches:
            if isinstance(branch.node, cst.If) and branch.part in ("body", "orelse"):
                if _cuda_test(branch.node.test) == branch.part:
                    return True
        regions = self.facts.enclosing_autocast(site.ctx)
        return bool(regions) and regions[-1].device == "cuda"

    def _version_fallback(self, site: CallSite, checks: list[CallSite]) -> bool:
        """A fallback for old torch: the other side of a ``try``/``if`` calls the device form."""
        for branch in site.ctx.branches:
            if isinstance(branch.node, cst.Try) and branch.part == "handler":
                other = {Branch(branch.node, "body")}
            elif isinstance(branch.node, cst.If):
                other = {Branch(branch.node, "orelse" if branch.part == "body" else "body")}
            else:
                continue
            for check in checks:
                if check.node.args and other & set(check.ctx.branches):
                    return True
        return False

    # -- what to say
    def _device_in_scope(self, site: CallSite, function: FunctionInfo | None) -> str | None:
        if function is None:
            return None
        for param in function.params:
            if param == "device_type":
                return "this function takes `device_type`: pass it if that is the device meant"
        for autocast in self.facts.autocast_calls:
            node = autocast.region.device_node
            if autocast.site.ctx.scope is site.ctx.scope and node is not None and not _is_cuda_literal(node):
                return f"this function autocasts on `{self.facts.code(node)}`: pass that if it is the device meant"
        for assignment in self.facts.assignments:
            if assignment.ctx.scope is site.ctx.scope and "device_type" in assignment.targets:
                return "this function sets `device_type`: pass it if that is the device meant"
        return None
