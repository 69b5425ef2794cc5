"""An autocast region: a span of code that runs with autocast enabled, with the device type,
dtype and ``enabled`` it runs under as far as the code shows (see :mod:`amplint.amp.autocast`)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

import amplint.semantic.syntax as S


@dataclass(eq=False)
class AutocastRegion:
    """A span of code that runs with autocast enabled (as far as the code shows)."""

    node: cst.CSTNode  # With or FunctionDef (decorated)
    call: cst.Call | None  # the autocast(...) call, when one is visible
    device: str | None  # "cuda" | "cpu" | ... ; None when unknown
    dtype: str | None  # "float16" | "bfloat16" | "float32" | ... ; None when unknown
    enabled: bool | None  # literal enabled=..., None when not literal
    resolved: bool  # True: proven autocast by name resolution; False: named like one
    deprecated: str | None = None  # "cuda" / "cpu" for torch.cuda.amp / torch.cpu.amp
    conditional: bool = False  # e.g. ``nullcontext() if cpu else autocast(...)``
    # The expressions bound to ``device_type`` / ``dtype`` in the autocast call, when given
    # (``device`` holds only the literal type string; AMP015 needs to see ``torch.device(...)``).
    device_node: cst.BaseExpression | None = None
    dtype_node: cst.BaseExpression | None = None
    # False for a region only named like autocast whose name comes from a parameter, a
    # same-file helper or assignments none of whose values can build one (``suppress``).
    may_be_autocast: bool = True

    # The dtypes a ``dtype=`` expression may name when it is not a literal (``ptdtype`` from a dict).
    dtype_choices: frozenset[str] | None = None
    # The other autocasts a choice may build (``{"fp16": autocast(...), "bf16": autocast(...)}[mp]``).
    alternatives: tuple["AutocastRegion", ...] = ()
    enabled_node: cst.BaseExpression | None = None
    # Every alternative of the choice is an autocast or a null context (none is unknown).
    choices_known: bool = True

    @property
    def maybe_enabled(self) -> bool:
        return self.enabled is not False

    @property
    def own_dtypes(self) -> frozenset[str] | None:
        if self.dtype is not None:
            return frozenset({self.dtype})
        if self.dtype_node is not None and not S.is_none(self.dtype_node):
            return self.dtype_choices  # a dtype the file may not show
        if self.call is None:
            return None
        default = {"cuda": "float16", "cpu": "bfloat16"}.get(self.device or "")
        return frozenset({default}) if default else None

    @property
    def dtypes(self) -> frozenset[str] | None:
        """Every dtype the region may run in (all alternatives of a choice); ``None`` when one is unknown."""
        out: set[str] = set()
        for region in (self, *self.alternatives):
            found = region.own_dtypes
            if found is None:
                return None
            out |= found
        return frozenset(out)

    @property
    def effective_dtype(self) -> str | None:
        """The one dtype the region runs in; ``None`` when unknown or when it may be one of several."""
        dtypes = self.dtypes
        return next(iter(dtypes)) if dtypes is not None and len(dtypes) == 1 else None
