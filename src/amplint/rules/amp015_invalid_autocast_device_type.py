from __future__ import annotations

from dataclasses import dataclass
from textwrap import dedent
from typing import Iterator

import libcst as cst

from amplint.amp import AutocastCall
from amplint.amp.autocast import device_type_of, indexed_fstring_device_type
from amplint.fix import Fix, NoFix
import amplint.fix.edits as E
from amplint.model import FixSafety
from amplint.rules.base import Invalid, Rule, Violation
from amplint.semantic import Scope
import amplint.semantic.syntax as S

_TORCH_DEVICE = "torch.device"


@dataclass
class _Verdict:
    message: str
    replacement: cst.BaseExpression | None = None
    no_fix_reason: str | None = None


class InvalidAutocastDeviceType(Rule):
    """
    ## What it does
    Finds autocast calls whose `device_type` is not a bare device type string: a `torch.device(...)`
    object (inline, or a variable assigned one in the same function or module), or an indexed string
    such as `"cuda:0"`. Every autocast spelling is checked: `torch.autocast`, `torch.amp.autocast`,
    imported or aliased names, decorators and `functools.partial(torch.autocast, device_type=...)`.

    ## Why is this bad?
    `torch.autocast` requires `device_type` to be a `str`; given a `torch.device` it raises
    `ValueError: Expected device_type of type str` the moment the context manager is built, so the
    code path (often the AMP-only path of a training script) crashes. An indexed string such as
    `"cuda:0"` is accepted, but it is not the device type autocast is keyed on: it bypasses the
    CUDA availability check that `"cuda"` gets. Autocast applies to every device of that type;
    there is nothing to index.

    ## Example
    ```python
    import torch

    def train_step(model, optimizer, scaler, x, y):
        with torch.autocast(device_type=torch.device("cuda")):
            loss = torch.nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Use instead
    ```python
    import torch

    def train_step(model, optimizer, scaler, x, y):
        with torch.autocast(device_type="cuda"):
            loss = torch.nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Fix safety
    The fix is safe for literals: `"cuda:0"` and `torch.device("cuda")` / `torch.device("cuda:1")`
    become `"cuda"`, the device type they name. `torch.device(x)` with a non-literal `x` is reported
    without a fix, because `x.type` is not always right (`x` may be a string). A variable that holds a
    `torch.device` is reported without a fix; pass `device.type`.

    ## References
    - [torch.autocast](https://pytorch.org/docs/stable/amp.html#torch.autocast)
    - [Automatic Mixed Precision recipe](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    """

    code = "AMP015"
    name = "invalid-autocast-device-type"
    summary = "autocast `device_type` is a `torch.device` or an indexed device string"
    fix_safety = FixSafety.SAFE
    fix_withheld = "when the device type is not a literal or a device object stands in for it"
    triggers = ("autocast",)
    # ``self.device = torch.device(...)`` set in a method other than the autocast one.
    focus_tokens = ("torch.device",)

    valid = (
        dedent("""\
            import torch
            with torch.autocast(device_type='cuda'):
                pass
        """),
        dedent("""\
            import torch
            def f(x):
                with torch.autocast(x.device.type):
                    return x
        """),
        dedent("""\
            import torch
            device = torch.device('cuda')
            with torch.autocast(device.type):
                pass
        """),
        dedent("""\
            import torch
            def f(device):
                with torch.autocast(device_type=device):
                    pass
        """),
        dedent("""\
            def autocast(device):
                pass
            with autocast(torch.device('cuda')):
                pass
        """),
        dedent("""\
            import torch
            with torch.cuda.amp.autocast():
                pass
        """),
    )
    invalid = (
        Invalid(
            dedent("""\
                import torch
                with torch.autocast('cuda:0'):
                    pass
            """),
            fixed=dedent("""\
                import torch
                with torch.autocast('cuda'):
                    pass
            """),
        ),
        Invalid(
            dedent("""\
                import torch
                with torch.autocast(device_type=torch.device('cuda:1'), dtype=torch.bfloat16):
                    pass
            """),
            fixed=dedent("""\
                import torch
                with torch.autocast(device_type='cuda', dtype=torch.bfloat16):
                    pass
            """),
        ),
        Invalid(
            dedent("""\
                import torch
                def main():
                    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
                    with torch.autocast(device_type=device):
                        pass
            """),
        ),
        Invalid(
            dedent("""\
                import torch
                def f(name):
                    with torch.autocast(torch.device(name)):
                        pass
            """),
        ),
    )

    def check(self) -> Iterator[Violation]:
        for autocast in self.facts.autocast.autocast_calls:
            node = autocast.region.device_node
            if node is None:
                continue
            verdict = self._judge(node, autocast)
            if verdict is None:
                continue
            fix = NoFix(verdict.no_fix_reason) if verdict.no_fix_reason else None
            if verdict.replacement is not None:
                fix = Fix.safe(f"Use `{self.facts.module.code_for_node(verdict.replacement)}`", {node: verdict.replacement})
            yield self.violation(node, verdict.message, fix=fix)

    # -- judging one device argument
    def _judge(self, node: cst.BaseExpression, autocast: AutocastCall) -> _Verdict | None:
        scope = autocast.site.ctx.scope
        if isinstance(node, cst.SimpleString):
            text = S.string_value(node)
            kind = device_type_of(text) if text is not None and ":" in text else None
            if kind is None:
                return None
            return _Verdict(
                f'`device_type` must be a device type such as "{kind}", not the device "{text}": '
                f'an indexed string bypasses autocast\'s "{kind}" availability check',
                replacement=E.string_literal_like(node, kind),
            )
        if isinstance(node, cst.FormattedString):
            kind = indexed_fstring_device_type(node)
            if kind is None:
                return None
            return _Verdict(
                f'`device_type` must be a device type such as "{kind}", not an indexed device '
                f'`{self.facts.code(node)}`: an indexed string bypasses autocast\'s availability check',
                replacement=cst.SimpleString(f'"{kind}"'),
            )
        if isinstance(node, cst.Call) and self.facts.bindings.qualname(node.func, scope) == _TORCH_DEVICE:
            return self._judge_device_call(node)
        key = S.dotted(node)
        return self._judge_variable(key, scope) if key is not None else None

    def _judge_device_call(self, call: cst.Call) -> _Verdict:
        raises = (
            f"`device_type` must be a string: `{self.facts.code(call)}` is a `torch.device` and "
            "autocast raises `ValueError` when it is constructed"
        )
        if S.has_star_args(call):
            return _Verdict(raises, no_fix_reason="the device's arguments are not known statically")
        type_node = S.argument(call, 0, "type")
        text = S.string_value(type_node)
        kind = device_type_of(text) if text is not None else None
        if kind is not None:
            assert isinstance(type_node, cst.SimpleString)
            return _Verdict(raises, replacement=E.string_literal_like(type_node, kind))
        return _Verdict(
            raises + "; pass the device type string instead (e.g. `torch.device(...).type`)",
            no_fix_reason="the device type is not a literal; `x.type` is not always right (x may be a string)",
        )

    def _judge_variable(self, key: str, scope: Scope) -> _Verdict | None:
        """A variable every value of which is a ``torch.device(...)`` call or a string literal."""
        values = self.facts.values.assigned_alternatives(key, scope, booleans=False)
        if not values or not all(self._is_device_call(v) or isinstance(v, cst.SimpleString) for _, v in values):
            return None
        device_calls = [assignment for assignment, value in values if isinstance(value, cst.Call)]
        if device_calls:
            line = self.facts.position(device_calls[0].node).start.line
            return _Verdict(
                f"`device_type` must be a string: `{key}` holds a `torch.device` (assigned on line {line}) and "
                f"autocast raises `ValueError` when it is constructed; pass `{key}.type`",
                no_fix_reason=f"rewrite it by hand as `{key}.type`",
            )
        indexed = [(a, text) for a, v in values if ":" in (text := S.string_value(v) or "") and device_type_of(text)]
        if not indexed:
            return None
        assignment, text = indexed[0]
        kind = device_type_of(text)
        return _Verdict(
            f'`device_type` must be a device type such as "{kind}": `{key}` may hold the indexed device '
            f'"{text}" (assigned on line {self.facts.position(assignment.node).start.line}), which bypasses '
            f"autocast's availability check",
            no_fix_reason=f'pass the device type ("{kind}") instead of the device',
        )

    def _is_device_call(self, value: cst.BaseExpression | None) -> bool:
        site = self.facts.call_site(value) if isinstance(value, cst.Call) else None
        return site is not None and site.qualname == _TORCH_DEVICE
