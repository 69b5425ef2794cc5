from __future__ import annotations

from typing import Iterator

import libcst as cst

import amplint.semantic.syntax as S
from amplint.model import FixSafety, Severity
from amplint.rules.base import Rule, Violation


def _names_bare(node: cst.CSTNode, name: str) -> bool:
    """``node`` holds the name itself (``f(scaler)``, ``return scaler``, ``[scaler]``), not only
    its attributes (``scaler.state_dict()``)."""
    if isinstance(node, cst.Name):
        return node.value == name
    if isinstance(node, cst.Attribute):
        return _names_bare(node.value, name) if not isinstance(node.value, cst.Name) else False
    return any(_names_bare(child, name) for child in node.children)


class ScalerWithBf16(Rule):
    """
    ## What it does
    Reports an enabled `GradScaler` in a file whose every autocast region runs in bfloat16: all
    regions pass `dtype=torch.bfloat16`, are CPU regions with the default dtype (bfloat16), or take
    their dtype from a choice that only ever yields bfloat16 or float32 (`torch.bfloat16 if bf16
    else torch.float32`, a dict of dtypes without float16, a dict looked up by a command-line option
    whose `choices=` leave float16 out, an attribute such as `args.dtype` set once to such a choice
    earlier in the same function and handed to no call in between). A scaler built with `enabled=` set from a condition is
    reported only when that condition is the very one every region is enabled by
    (`GradScaler(enabled=cfg.bf16)` beside `autocast(dtype=torch.bfloat16, enabled=cfg.bf16)`).
    Files with any region whose dtype is unknown or may be float16 are not reported, except for a
    scaler local to one function that never hands it on (no call argument, return or other
    variable holds it) and calls no function of the file that opens an autocast: that scaler is
    checked against its own function's regions.

    ## Why is this bad?
    Loss scaling exists because float16 has a narrow exponent range and small gradients underflow
    to zero. bfloat16 has float32's exponent range, so its gradients do not underflow and need no
    scaling: the AMP docs use a `GradScaler` only with float16. The scaler then only adds work (a
    multiplication, an inf/NaN check per step, a host sync) and may still skip steps on overflow.
    This is informational: the code trains correctly.

    ## Example
    ```python
    import torch

    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Use instead
    ```python
    import torch

    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Fix safety
    There is no fix: removing the scaler means rewriting every `scale`/`step`/`update` call, and a
    scaler kept for a float16 mode should be built with `enabled=(dtype == torch.float16)`.

    ## References
    - [Automatic Mixed Precision package - torch.amp](https://pytorch.org/docs/stable/amp.html)
    - [CUDA Automatic Mixed Precision examples](https://pytorch.org/docs/stable/notes/amp_examples.html)
    - [Automatic Mixed Precision recipe](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    """

    code = "AMP011"
    name = "scaler-with-bf16"
    summary = "GradScaler used only with bfloat16 autocast"
    severity = Severity.INFO
    fix_safety = FixSafety.NONE
    triggers = ("GradScaler",)
    # The command-line choices that narrow a dtype table's key live in ``main()``.
    focus_tokens = ("add_argument",)

    valid = (
        "import torch\nscaler = torch.amp.GradScaler('cuda')\nwith torch.autocast('cuda'):\n    loss = model(x)\n",
        "import torch\nscaler = torch.amp.GradScaler('cuda', enabled=dtype == torch.float16)\n"
        "with torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)\n",
        "import torch\nscaler = torch.amp.GradScaler('cuda')\nwith torch.autocast('cuda', dtype=amp_dtype):\n    loss = model(x)\n",
        "import torch\nscaler = torch.amp.GradScaler('cuda')\n",
        "import torch\nDT = {'bf16': torch.bfloat16, 'fp16': torch.float16}\nscaler = torch.amp.GradScaler('cuda')\n"
        "with torch.autocast('cuda', dtype=DT[args.precision]):\n    loss = model(x)\n",
    )
    invalid = (
        "import torch\nscaler = torch.amp.GradScaler('cuda')\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)\n",
        "import torch\nscaler = torch.amp.GradScaler('cpu')\nwith torch.autocast('cpu'):\n    loss = model(x)\n",
        "import torch\nscaler = torch.cuda.amp.GradScaler(enabled=True)\n"
        "with torch.cuda.amp.autocast(dtype=torch.bfloat16):\n    loss = model(x)\n",
        "import torch\nscaler = torch.amp.GradScaler('cuda', enabled=cfg.bf16)\n"
        "with torch.autocast('cuda', dtype=torch.bfloat16, enabled=cfg.bf16):\n    loss = model(x)\n",
        "import torch\ndtype = torch.bfloat16 if bf16 else torch.float32\nscaler = torch.amp.GradScaler('cuda')\n"
        "with torch.autocast('cuda', dtype=dtype):\n    loss = model(x)\n",
    )

    def check(self) -> Iterator[Violation]:
        facts = self.facts
        if not facts.scaling.scalers:
            return
        for key, info in facts.scaling.scalers.items():
            found = list(self._check_scaler(info, None))
            if not found and (function := self._sole_function(key, info)) is not None:
                # a float16 region elsewhere in the file does not reach a scaler that never leaves its function
                found = list(self._check_scaler(info, function))
            yield from found

    def _check_scaler(self, info, function) -> Iterator[Violation]:
        """``info``'s constructions against the autocast regions of ``function`` (the scaler's
        own function, when it never leaves it), else of the whole file."""
        facts = self.facts
        regions = [r for node, rs in facts.autocast.autocast_regions.items() for r in rs
                   if r.enabled is not False and (function is None or self._within(node, function))]
        if not regions or any(not self._without_float16(r) for r in regions):
            return
        if not any("bfloat16" in r.dtypes for r in regions):
            return
        if function is not None and self._reaches_other_regions(function):
            return
        gates = {facts.tree.flat(r.enabled_node) if r.enabled is None and r.enabled_node is not None else None for r in regions}
        dtypes = " (or float32)" if any("float32" in r.dtypes for r in regions) else ""
        where = f"`{function.name}`" if function is not None else "this file"
        otherwise = f"but every autocast region in {where} runs in bfloat16{dtypes}"
        for site in info.constructions:
            if S.has_star_args(site.node) or len(S.positional_args(site.node)) > 2:
                continue
            enabled = S.keyword_arg_value(site.node, "enabled")
            gated = enabled is not None and S.bool_value(enabled) is None and gates == {facts.tree.flat(enabled)}
            if enabled is not None and S.bool_value(enabled) is not True and not gated:
                continue
            when = f"exactly when `{facts.code(enabled)}` enables the autocast regions, which run in bfloat16{dtypes}" \
                if gated else otherwise
            yield self.violation(
                site.node,
                f"GradScaler is enabled {when}; bfloat16 has float32's exponent range "
                "and needs no loss scaling: the scaler only adds work (drop it, or build it with `enabled=` "
                "true only for float16)",
            )

    def _sole_function(self, key: str, info):
        """The function scope that builds the local scaler ``key`` and is the only code that can
        use it: it is not handed to a call, returned, stored elsewhere or a module-level name."""
        facts = self.facts
        scopes = {site.ctx.scope for site in info.constructions}
        if "." in key or len(scopes) != 1:
            return None
        scope = next(iter(scopes))
        if scope.kind != "function":
            return None
        for site in facts.calls:
            if any(_names_bare(arg.value, key) for arg in site.node.args):
                return None
        for value, _ in facts.records.returns:
            if _names_bare(value, key):
                return None
        for assignment in facts.assignments:
            if assignment.value is not None and _names_bare(assignment.value, key):
                return None
        return scope

    def _reaches_other_regions(self, function) -> bool:
        """A region outside ``function`` may run under it: it sits at module level, or in a
        function ``function`` calls by name (``loss = compute_loss(...)`` opening its own autocast)."""
        facts = self.facts
        called = {(site.func_text or "").rsplit(".", 1)[-1] for site in facts.calls if self._scope_within(site.ctx.scope, function)}
        for node in facts.autocast.autocast_regions:
            if self._within(node, function):
                continue
            scope = self._region_scopes.get(id(node))
            if scope is None or scope.kind != "function" and scope.function.kind == "module":
                return True
            while scope is not None and scope.kind != "module":
                if scope.name in called:
                    return True
                scope = scope.parent
            if isinstance(node, cst.FunctionDef) and node.name.value in called:
                return True
        return False

    @staticmethod
    def _scope_within(scope, function) -> bool:
        while scope is not None:
            if scope is function:
                return True
            scope = scope.parent
        return False

    def _within(self, node, function) -> bool:
        """The ``with`` (or decorated def) ``node`` runs in ``function`` or in a function nested in it."""
        return self._scope_within(self._region_scopes.get(id(node)), function)

    @property
    def _region_scopes(self) -> dict:
        if not hasattr(self, "_region_scopes_cache"):
            out = {id(node): ctx.scope for node, ctx in self.facts.records.withs}
            out.update({id(f.node): f.ctx.scope for f in self.facts.functions})
            self._region_scopes_cache = out
        return self._region_scopes_cache

    @staticmethod
    def _without_float16(region) -> bool:
        """The region is an autocast whose every choice is known and runs in bfloat16 or float32."""
        dtypes = region.dtypes
        return region.resolved and region.choices_known and dtypes is not None and dtypes <= {"bfloat16", "float32"}
