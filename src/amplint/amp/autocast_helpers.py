"""Autocast opened through a helper: a function that returns or yields an autocast
(``@contextmanager def torch_autocast(device_type="cuda", **kwargs): with torch.amp.autocast(
device_type=device_type, **kwargs): yield``), read where it is called.

The helper's autocast takes its device type, dtype and ``enabled`` from the helper's parameters
(``device_type``, a ``dtype`` parameter, or the call's keywords through ``**kwargs``) or from
literals written in it. :func:`helper_autocast` records where each comes from, as an
:class:`~amplint.project.records.AutocastHelper` (summaries carry it to other modules), and a call
of the helper is then read with its own arguments: :func:`bind_same_file` for a helper of this
file, :func:`imported_helper_region` for one another module of the project defines.
"""

from __future__ import annotations

import libcst as cst

import amplint.amp.catalogue as API
from amplint.amp.autocast_region import AutocastRegion
from amplint.project.records import AutocastHelper
import amplint.semantic.syntax as S
from amplint.semantic.records import CallSite, FunctionInfo, Scope

_DEFAULT_DTYPES = {"cuda": "float16", "cpu": "bfloat16"}


def helper_autocast(facts, function: FunctionInfo, depth: int = 0) -> AutocastHelper | None:
    """Where the autocast ``function`` returns or yields takes its settings from; ``None`` when it
    builds none, or one that is off or whose device is not known."""
    region = facts.autocast.function_autocast(function, depth)
    if region is None or region.call is None or region.enabled is False or region.alternatives:
        return None
    node = function.node
    varkw = node.params.star_kwarg.name.value if isinstance(node.params.star_kwarg, cst.Param) else None
    forwards = varkw is not None and any(arg.star == "**" and S.dotted(arg.value) == varkw for arg in region.call.args)

    def source(value: cst.BaseExpression | None, keyword: str) -> tuple[str, cst.BaseExpression | None]:
        """(the parameter the value comes from, or "**" / "", the literal it defaults to)."""
        if isinstance(value, cst.Name) and value.value in function.params and value.value != varkw:
            return value.value, S.parameter_default(node, value.value)
        if value is None and forwards and keyword not in function.params:
            return "**", None
        return "", value

    if region.deprecated:  # ``torch.cuda.amp.autocast(**kwargs)``: the device is the module's
        device_param, device = "", region.device
    else:
        device_param, device_value = source(region.device_node, "device_type")
        device = S.string_value(device_value) if device_value is not None else None
    if device is None:
        return None
    dtype_param, dtype_value = source(region.dtype_node, "dtype")
    dtype = API.dtype_from_text(S.dotted(dtype_value) or S.string_value(dtype_value)) if dtype_value is not None else None
    if dtype_value is not None and dtype is None and not S.is_none(dtype_value):
        return None  # a dtype the helper computes: not known here
    enabled_param, enabled_value = source(region.enabled_node, "enabled")
    enabled = S.bool_value(enabled_value) if enabled_value is not None else True
    return AutocastHelper(device.split(":")[0], dtype or "", device_param, dtype_param, enabled_param,
                          "" if enabled is None else str(enabled))


def _settings(facts, shape: AutocastHelper, argument, keyword, scope: Scope) -> dict:
    """The region's device, dtype and ``enabled`` at one call: ``argument(param)`` is the
    expression the call passes for a named parameter, ``keyword(name)`` one it passes through
    ``**kwargs``."""

    def given(param: str, name: str) -> cst.BaseExpression | None:
        if param == "**":
            return keyword(name)
        return argument(param) if param else None

    device_node = given(shape.device_param, "device_type")
    device = S.string_value(device_node) if device_node is not None else shape.device
    device = device.split(":")[0] if device else None
    dtype_node = given(shape.dtype_param, "dtype")
    dtype = facts.autocast.dtype_name(dtype_node) if dtype_node is not None else (shape.dtype or None)
    enabled_node = given(shape.enabled_param, "enabled")
    enabled = S.bool_value(enabled_node) if enabled_node is not None else {"True": True, "False": False}.get(shape.enabled)
    return {
        "device": device,
        "dtype": dtype,
        "dtype_node": dtype_node,
        "dtype_choices": facts.dtypes.dtype_choices(dtype_node, scope) if dtype is None and dtype_node is not None else None,
        "enabled": enabled,
        "enabled_node": enabled_node,
    }


def bind_same_file(facts, region: AutocastRegion, function: FunctionInfo, site: CallSite, depth: int) -> AutocastRegion:
    """``region``, the autocast the same-file helper ``function`` builds, as the call ``site``
    opens it: the device type, dtype and ``enabled`` it passes (or the helper's defaults)."""
    shape = helper_autocast(facts, function, depth)
    if shape is None:
        return region
    settings = _settings(
        facts, shape, lambda param: facts.callgraph.argument_for(site, function, param),
        lambda name: S.keyword_arg_value(site.node, name), site.ctx.scope,
    )
    for name, value in settings.items():
        setattr(region, name, value)
    return region


def imported_helper_region(facts, expr: cst.BaseExpression, scope: Scope) -> AutocastRegion | None:
    """``with torch_autocast(enabled=params.use_fp16):`` where ``torch_autocast`` is imported
    from a module of the project whose summary says it opens an autocast: that autocast, as
    this call opens it (float16 on CUDA unless the call or the helper says otherwise)."""
    if not isinstance(expr, cst.Call):
        return None
    head = (S.dotted(expr.func) or "").split(".")[0]
    bindings = facts.bindings.bindings_of(head, scope) if head else []
    if not bindings or any(not b.is_import or b.scope.kind != "module" for b in bindings):
        return None  # asked only of imports: a file's own helpers are read from its facts
    site = facts.call_site(expr)
    callee = facts.project.callee(site) if site is not None else None
    shape = callee.function.autocast if callee is not None else None
    if shape is None:
        return None
    function = callee.function

    def argument(param: str) -> cst.BaseExpression | None:
        names = function.params[1:] if "." in function.name and function.params[:1] == ("self",) else function.params
        return S.argument(expr, names.index(param) if param in names else None, param)

    settings = _settings(facts, shape, argument, lambda name: S.keyword_arg_value(expr, name), scope)
    device = settings.pop("device")
    if settings["dtype"] is None and settings["dtype_node"] is None:
        settings["dtype"] = _DEFAULT_DTYPES.get(device or "")
    return AutocastRegion(node=expr, call=None, device=device, resolved=True, **settings)
