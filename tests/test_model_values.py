"""The possible values of an expression and what names hold, as the model answers them."""

from __future__ import annotations

from textwrap import dedent

import libcst as cst

from amplint.amp import FileFacts
from amplint.semantic.values import alternatives, value_calls

AMP_CONTEXT = dedent("""\
    import contextlib
    import torch
    from torch import nn

    def make_context(args, device):
        if args.amp:
            return torch.autocast(device, dtype=torch.float16) if args.fp16 else torch.autocast(device)
        return {"none": contextlib.nullcontext(), "bf16": torch.autocast(device, dtype=torch.bfloat16)}[args.mode]

    def main(args):
        device = "cuda:0" if args.gpu else "cpu"
        device = torch.device(device)
        for epoch in range(3):
            pass
        criterion = nn.BCELoss()
        loss = criterion(torch.sigmoid(logits), labels) + nn.BCELoss()(p, y)
        other = nn.MSELoss()(p, y)
""")


def _expression(code: str) -> cst.BaseExpression:
    return cst.parse_expression(code)


def _code(nodes) -> list[str]:
    return [cst.Module([]).code_for_node(n) for n in nodes]


def test_alternatives_follow_conditionals_booleans_and_dict_lookups_as_asked():
    value = _expression('a if c else (b or {"x": d, "y": e if f else g}[k])')
    assert _code(alternatives(value)) == ["a", "b", '{"x": d, "y": e if f else g}[k]']
    assert _code(alternatives(value, subscripts=True)) == ["a", "b", "d", "e", "g"]
    assert _code(alternatives(value, booleans=False)) == ["a", '(b or {"x": d, "y": e if f else g}[k])']
    assert alternatives(None) == []


def test_value_calls_are_the_call_alternatives():
    value = _expression("torch.autocast('cuda') if amp else nullcontext() or other")
    assert _code(value_calls(value)) == ["torch.autocast('cuda')", "nullcontext()"]


def test_sole_assignments_need_every_binding_to_be_an_assignment():
    facts = FileFacts.from_source(AMP_CONTEXT)
    main = next(s for s in facts.scopes if s.name == "main")
    device = facts.values.sole_assignments("device", main)
    assert [facts.position(a.node).start.line for a in device] == [11, 12]
    assert facts.values.sole_assignments("epoch", main) == []  # a loop variable: its values are not known
    assert facts.values.sole_assignments("args", main) == []  # a parameter
    leaves = facts.values.assigned_alternatives("device", main, booleans=False)
    assert _code(leaf for _, leaf in leaves) == ['"cuda:0"', '"cpu"', "torch.device(device)"]


def test_instance_calls_reach_objects_built_from_a_class():
    facts = FileFacts.from_source(AMP_CONTEXT)
    bce = frozenset({"torch.nn.BCELoss"})
    assert facts.values.names_built_by(bce) == {"criterion"}
    assert _code(site.node for site in facts.values.instance_calls(bce)) == [
        "criterion(torch.sigmoid(logits), labels)", "nn.BCELoss()(p, y)",
    ]


def test_calls_to_keeps_source_order_across_names():
    facts = FileFacts.from_source(AMP_CONTEXT)
    sites = facts.call_index.calls_to({"torch.nn.MSELoss", "torch.nn.BCELoss"})
    assert _code(site.node for site in sites) == ["nn.BCELoss()", "nn.BCELoss()", "nn.MSELoss()"]
