"""A stable, readable dump of what the facts pass derives from one module.

``tests/test_facts_golden.py`` compares it with the stored dumps under ``tests/golden/facts/``
for every fixture, so a restructuring of the semantic layer is checked mechanically: any change
in events, autocast regions, scalers, optimizers, loops, functions or bindings shows up as a
diff. Regenerate deliberately with ``AMPLINT_UPDATE_GOLDEN=1 python -m pytest tests/test_facts_golden.py``.
"""

from __future__ import annotations

from typing import Any

from amplint.amp import FileFacts


def _line(facts: FileFacts, node) -> int:
    return facts.position(node).start.line


def _where(facts: FileFacts, node) -> str:
    start = facts.position(node).start
    return f"{start.line}:{start.column}"


def _scope(facts: FileFacts, scope) -> str:
    if scope.kind == "module":
        return "<module>"
    return f"{scope.name}@{_line(facts, scope.node)}"


def _scopes(facts: FileFacts, scopes) -> list[str]:
    return sorted(_scope(facts, s) for s in scopes)


def _loops(facts: FileFacts, loops) -> list[int]:
    return sorted(_line(facts, loop.node) for loop in loops)


def dump(facts: FileFacts) -> dict[str, Any]:
    events = [
        {
            "kind": getattr(e.kind, "value", e.kind),
            "at": _where(facts, e.call),
            "scope": _scope(facts, e.ctx.scope),
            "loops": [_line(facts, loop.node) for loop in e.ctx.loops],
            **{k: v for k, v in (("scaler", e.scaler), ("optimizer", e.optimizer), ("receiver", e.receiver)) if v is not None},
        }
        for e in facts.timeline.events
    ]
    regions = []
    for node, found in facts.autocast.autocast_regions.items():
        for region in found:
            regions.append(
                {
                    "at": _where(facts, node),
                    "device": region.device,
                    "dtype": region.dtype,
                    "effective_dtype": region.effective_dtype,
                    "enabled": region.enabled,
                    "resolved": region.resolved,
                    "deprecated": region.deprecated,
                    "conditional": region.conditional,
                }
            )
    regions.sort(key=lambda r: (int(r["at"].split(":")[0]), int(r["at"].split(":")[1])))
    bindings = {}
    for scope in facts.scopes:
        names = {name: sorted(f"{b.kind.value}:{b.target}" if b.target else b.kind.value for b in found) for name, found in scope.bindings.items()}
        if names:
            bindings[_scope(facts, scope)] = dict(sorted(names.items()))
    return {
        "events": events,
        "autocast_regions": regions,
        "autocast_calls": [
            {"at": _where(facts, c.call), "qualname": c.qualname, "partial": c.partial, "device": c.region.device, "dtype": c.region.dtype}
            for c in facts.autocast.autocast_calls
        ],
        "scalers": {
            key: {"constructed": sorted(_line(facts, c.node) for c in info.constructions), "evidence": sorted(info.evidence),
                  "provably_disabled": info.provably_disabled}
            for key, info in sorted(facts.scaling.scalers.items())
        },
        "scaler_constructions": sorted(_where(facts, s.node) for s in facts.scaling.scaler_construction_sites),
        "optimizers": sorted(facts.optim.optimizers),
        "optimizer_builds": sorted(facts.optim.optimizer_builds),
        "optimizer_constructions": sorted(_where(facts, s.node) for s in facts.optim.optimizer_constructions),
        "optimized_modules": sorted(f"{key}@{_line(facts, site.node)}" for key, site in facts.optim.optimized_modules),
        "frozen_modules": sorted(facts.models.frozen_modules),
        "training_loops": _loops(facts, facts.training.training_loops),
        "backward_loops": _loops(facts, facts.training.backward_loops),
        "training_functions": _scopes(facts, facts.training.training_functions),
        "backward_functions": _scopes(facts, facts.training.backward_functions),
        "updating_functions": _scopes(facts, facts.training.updating_functions),
        "per_step_functions": _scopes(facts, facts.training.per_step_functions),
        "grad_disabled": sorted(_line(facts, n) for n in facts.models.grad_disabled_nodes),
        "bindings": bindings,
        "summaries": _summaries(facts),
        "paths": _paths(facts),
        "protocol": _protocol(facts),
    }


# The training-step events whose order the loop and scaler rules ask about.
_STEP_KINDS = ("scale_backward", "backward", "unscale", "clip", "scaler_step", "optimizer_step", "update", "zero_grad")


def _paths(facts: FileFacts) -> dict[str, list[str]]:
    """For each pair of step events of one function, in source order, what the control-flow graph
    says: ``reaches``, ``dominates``, ``on_every_path`` (a then b) and ``loops_back`` (b, then a
    in a later iteration)."""
    flow = facts.control_flow
    by_scope: dict[str, list] = {}
    for event in facts.timeline.events:
        if getattr(event.kind, "value", event.kind) in _STEP_KINDS:
            by_scope.setdefault(_scope(facts, event.ctx.scope), []).append(event)
    out: dict[str, list[str]] = {}
    for scope, events in sorted(by_scope.items()):
        pairs = []
        for i, a in enumerate(events):
            for b in events[i + 1:]:
                said = [name for name, holds in (
                    ("reaches", flow.reaches(a.ctx, b.ctx)), ("dominates", flow.dominates(a.ctx, b.ctx)),
                    ("on_every_path", flow.on_every_path(a.ctx, b.ctx)),
                    ("loops_back", flow.reaches(b.ctx, a.ctx, across_iterations=True)),
                ) if holds]
                pairs.append(f"{a.kind}@{_line(facts, a.call)} -> {b.kind}@{_line(facts, b.call)}: {' '.join(said) or '-'}")
        out[scope] = pairs
    return out


def _protocol(facts: FileFacts) -> dict[str, list[str]]:
    """What the GradScaler protocol run says at each step event: the misuses it is on some path,
    in one pass and only across passes (code, misuse, optimizer, the line that set the state)."""
    import amplint.scaler_protocol as P

    names = {id(value): name for name, value in vars(P).items() if isinstance(value, P.Misuse)}
    out: dict[str, list[str]] = {}
    for event in facts.timeline.events:
        if getattr(event.kind, "value", event.kind) not in _STEP_KINDS:
            continue
        said = []
        for label, across in (("", False), ("next pass: ", True)):
            for found in facts.protocol.misuses_at(event, across_iterations=across):
                witness = found.before.stage_by if found.misuse.code in ("AMP009", "AMP010") else found.before.grads_by
                text = (f"{label}{found.misuse.code} {names[id(found.misuse)]} {found.optimizer or '*'}"
                        + (f" (from {_line(facts, witness.call)})" if witness is not None else ""))
                if text not in said and (not across or text.replace(label, "", 1) not in said):
                    said.append(text)
        if said:
            out[f"{event.kind}@{_where(facts, event.call)}"] = sorted(said)
    return out


def _summaries(facts: FileFacts) -> list[dict[str, Any]]:
    """What the module summary says each function does, without the parts that are only its signature."""
    from amplint.project.records import EFFECTS

    out = []
    for function in facts.project.own.functions:
        record = {
            "function": f"{function.name}@{function.line}",
            "effects": [effect for effect in EFFECTS if function.has(effect)],
            **{k: list(v) for k in ("saved_params", "saved_whole", "restored_params", "scaler_params") if (v := getattr(function, k))},
            "saves": [f"{save.line}: keys={list(save.keys)} complete={save.complete} optimizer={save.optimizer} scaler={save.scaler}"
                      for save in function.saves],
        }
        if record["effects"] or len(record) > 3 or record["saves"]:
            out.append({k: v for k, v in record.items() if v})
    return out
