"""What an old ``torch.{cuda,cpu}.amp.autocast(...)`` would inherit once rewritten to
``torch.amp.autocast``: the old classes hard-code ``dtype`` and ``cache_enabled``, the new one
takes each it is not given from the autocast state it is built in (AMP001's fix safety)."""

from __future__ import annotations

import libcst as cst

from amplint.amp.compat import OLD_AUTOCAST_PARAMETERS
from amplint.semantic.records import Context
import amplint.semantic.syntax as S


def _region_cache(region) -> cst.BaseExpression | cst.Name:
    """The ``cache_enabled`` an autocast region is built with (keyword or positional: third for the
    old classes, fourth for ``torch.amp.autocast``); the literal ``True`` when it is not given."""
    if region.call is None:
        return cst.Name("True")
    value = S.keyword_arg_value(region.call, "cache_enabled")
    positionals = S.positional_args(region.call)
    index = 2 if region.deprecated else 3
    if value is None and len(positionals) > index:
        value = positionals[index].value
    return cst.Name("True") if value is None or S.is_none(value) else value


def inherited_autocast_setting(facts, call: cst.Call, ctx: Context, device: str) -> int | None:
    """The line of an autocast region around the old ``torch.{cuda,cpu}.amp.autocast(...)``
    ``call`` whose settings its ``torch.amp.autocast`` rewrite would inherit, where the old
    class did not: it hard-codes ``dtype`` (float16 on CUDA, bfloat16 on CPU) and
    ``cache_enabled=True``, the new one takes each it is not given from the autocast state it is
    built in. A region built with ``enabled=False`` counts too: it still sets the dtype and cache
    its body runs with. ``None`` when the call is off (``enabled=False``), outside any other
    region of its device, or each region's dtype and cache are the old defaults."""
    given = dict(zip(OLD_AUTOCAST_PARAMETERS, (arg.value for arg in S.positional_args(call))))
    given.update({name: S.keyword_arg_value(call, name) for name in OLD_AUTOCAST_PARAMETERS if S.keyword_arg(call, name)})
    if S.bool_value(given.get("enabled")) is False:
        return None
    default = {"cuda": "float16", "cpu": "bfloat16"}.get(device)
    for region in facts.autocast.enclosing_autocast(ctx, enabled_only=False):
        if region.device not in (device, None):
            continue
        if ("dtype" not in given and region.effective_dtype != default) or (
                "cache_enabled" not in given and S.bool_value(_region_cache(region)) is not True):
            return facts.position(region.node).start.line
    return None
