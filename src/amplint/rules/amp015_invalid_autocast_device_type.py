from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import libcst as cst

from amplint.semantic import syntax as S
from amplint.amp import AutocastCall
from amplint.semantic import BindingKind, Scope
from amplint.fix import Fix, NoFix
from amplint.model import FixSafety
from amplint.rules.base import Invalid, Rule, Violation

_TORCH_DEVICE = "torch.device"


@dataclass
class _Verdict:
    message: str
    replacement: cst.BaseExpression | None = None
    no_fix_reason: str | None = None


def _quoted_like(node: cst.SimpleString, value: str) -> cst.SimpleString:
    """``value`` as a string literal using the quote character of ``node``."""
    quote = node.quote if node.quote in ("'", '"') else '"'
    return cst.SimpleString(f"{quote}{value}{quote}")


def _device_type_of_literal(text: str) -> str | None:
    """``"cuda:0"`` -> ``"cuda"``; ``None`` unless the text is a plain ``type[:index]`` device."""
    kind, sep, index = text.partition(":")
    if not kind.isidentifier():
        return None
    if sep and not index.strip().isdigit():
        return None
    return kind


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
    fix_safety = FixSafety.SOMETIMES
    triggers = ("autocast",)
    # ``self.device = torch.device(...)`` set in a method other than the autocast one.
    focus_tokens = ("torch.device",)

    valid = (
        "import torch\nwith torch.autocast(device_type='cuda'):\n    pass\n",
        "import torch\ndef f(x):\n    with torch.autocast(x.device.type):\n        return x\n",
        "import torch\ndevice = torch.device('cuda')\nwith torch.autocast(device.type):\n    pass\n",
        "import torch\ndef f(device):\n    with torch.autocast(device_type=device):\n        pass\n",
        "def autocast(device):\n    pass\nwith autocast(torch.device('cuda')):\n    pass\n",
        "import torch\nwith torch.cuda.amp.autocast():\n    pass\n",
    )
    invalid = (
        Invalid(
            "import torch\nwith torch.autocast('cuda:0'):\n    pass\n",
            fixed="import torch\nwith torch.autocast('cuda'):\n    pass\n",
        ),
        Invalid(
            "import torch\nwith torch.autocast(device_type=torch.device('cuda:1'), dtype=torch.bfloat16):\n    pass\n",
            fixed="import torch\nwith torch.autocast(device_type='cuda', dtype=torch.bfloat16):\n    pass\n",
        ),
        Invalid(
            "import torch\ndef main():\n    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
            "    with torch.autocast(device_type=device):\n        pass\n"
        ),
        Invalid("import torch\ndef f(name):\n    with torch.autocast(torch.device(name)):\n        pass\n"),
    )

    def check(self) -> Iterator[Violation]:
        for autocast in self.facts.autocast_calls:
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
            if text is None or ":" not in text:
                return None
            kind = _device_type_of_literal(text)
            if kind is None:
                return None
            return _Verdict(
                f'`device_type` must be a device type such as "{kind}", not the device "{text}": '
                f'an indexed string bypasses autocast\'s "{kind}" availability check',
                replacement=_quoted_like(node, kind),
            )
        if isinstance(node, cst.FormattedString):
            kind = self._fstring_device_type(node)
            if kind is None:
                return None
            return _Verdict(
                f'`device_type` must be a device type such as "{kind}", not an indexed device '
                f'`{self.facts.code(node)}`: an indexed string bypasses autocast\'s availability check',
                replacement=cst.SimpleString(f'"{kind}"'),
            )
        if isinstance(node, cst.Call) and self.facts.qualname(node.func, scope) == _TORCH_DEVICE:
            return self._judge_device_call(node)
        key = S.dotted(node)
        if key is not None:
            return self._judge_variable(key, node, scope)
        return None

    def _fstring_device_type(self, node: cst.FormattedString) -> str | None:
        if not node.parts or not isinstance(node.parts[0], cst.FormattedStringText):
            return None
        head = node.parts[0].value
        kind, sep, rest = head.partition(":")
        if not sep or rest or len(node.parts) < 2 or not kind.isidentifier():
            # Only ``f"cuda:{rank}"``: a literal type, a colon, then the index expression.
            return None
        return kind

    def _judge_device_call(self, call: cst.Call) -> _Verdict:
        raises = (
            f"`device_type` must be a string: `{self.facts.code(call)}` is a `torch.device` and "
            "autocast raises `ValueError` when it is constructed"
        )
        if S.has_star_args(call):
            return _Verdict(raises, no_fix_reason="the device's arguments are not known statically")
        type_node = S.argument(call, 0, "type")
        text = S.string_value(type_node)
        kind = _device_type_of_literal(text) if text is not None else None
        if kind is not None:
            assert isinstance(type_node, cst.SimpleString)
            return _Verdict(raises, replacement=_quoted_like(type_node, kind))
        return _Verdict(
            raises + "; pass the device type string instead (e.g. `torch.device(...).type`)",
            no_fix_reason="the device type is not a literal; `x.type` is not always right (x may be a string)",
        )

    def _judge_variable(self, key: str, node: cst.BaseExpression, scope: Scope) -> _Verdict | None:
        assignments = self._assignments_seen_from(key, scope)
        if not assignments:
            return None
        device_call = indexed = None
        for assignment in assignments:
            values = self._possible_values(assignment.value)
            if values is None:
                return None
            for value in values:
                if isinstance(value, cst.Call):
                    device_call = device_call or (value, assignment)
                else:
                    text = S.string_value(value)
                    if text is not None and ":" in text and _device_type_of_literal(text) is not None:
                        indexed = indexed or (text, assignment)
        if device_call is None:
            if indexed is None:
                return None
            text, assignment = indexed
            line = self.facts.position(assignment.node).start.line
            kind = _device_type_of_literal(text)
            return _Verdict(
                f'`device_type` must be a device type such as "{kind}": `{key}` may hold the indexed device '
                f'"{text}" (assigned on line {line}), which bypasses autocast\'s availability check',
                no_fix_reason=f'pass the device type ("{kind}") instead of the device',
            )
        value, assignment = device_call
        line = self.facts.position(assignment.node).start.line
        return _Verdict(
            f"`device_type` must be a string: `{key}` holds a `torch.device` (assigned on line {line}) and "
            f"autocast raises `ValueError` when it is constructed; pass `{key}.type`",
            no_fix_reason=f"rewrite it by hand as `{key}.type`",
        )

    def _assignments_seen_from(self, key: str, scope: Scope) -> list:
        """The assignments that can bind ``key`` where it is read (same function, else module)."""
        facts = self.facts
        if key.startswith("self."):
            if key.count(".") != 1:
                return []
            return facts.assignments_to(key, scope)
        if "." in key:
            return []
        # Only a name bound by assignments alone (no parameter, loop variable or import of the
        # same name) has values we can know.
        owner = scope if scope.kind == "function" and key in scope.bindings else facts.scopes[0]
        bindings = owner.bindings.get(key, [])
        found = [a for a in facts.assignments if key in a.targets and a.ctx.scope is owner]
        if not bindings or any(b.kind is not BindingKind.ASSIGNMENT for b in bindings) or len(found) != len(bindings):
            return []
        return found

    def _possible_values(self, value: cst.BaseExpression | None) -> list[cst.BaseExpression] | None:
        """What an assigned value may evaluate to, when every branch is a ``torch.device(...)`` call or a
        plain string literal; ``None`` when anything else may flow in."""
        if value is None:
            return None
        if isinstance(value, cst.IfExp):
            body = self._possible_values(value.body)
            orelse = self._possible_values(value.orelse)
            return None if body is None or orelse is None else body + orelse
        if isinstance(value, cst.Call):
            return [value] if self._is_device_call(value) else None
        if isinstance(value, cst.SimpleString):
            return [value]
        return None

    def _is_device_call(self, call: cst.Call) -> bool:
        site = self.facts.call_site(call)
        return site is not None and site.qualname == _TORCH_DEVICE
