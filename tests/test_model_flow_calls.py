"""Flow and call-graph questions: statements through ``if`` blocks, one block, calls between two points,
the names a call's arguments read, calls that are part of an event, runs and their training loops."""

from __future__ import annotations

import textwrap

import libcst as cst

from amplint.amp import EventKind, FileFacts
from amplint.semantic import syntax as S

K = EventKind


def facts(code: str) -> FileFacts:
    return FileFacts.from_source(textwrap.dedent(code))


STEP = """
import torch

def train(model, loader, optimizer, scaler, writer):
    for i, x in enumerate(loader):
        with torch.autocast("cuda"):
            loss = model(x)
            scaler.scale(loss).backward()
            if (i + 1) % 4 == 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
            else:
                writer.add_scalar("loss", loss.item(), i)
            for p in model.parameters():
                p.grad = None
"""


def test_top_statement_through_if_blocks_only():
    f = facts(STEP)
    with_node = next(iter(f.with_contexts))
    body = with_node.body
    step = next(e for e in f.timeline.events if e.kind is K.SCALER_STEP)
    assert f.tree.top_statement_through_ifs(step.ctx.stmt, body) is body.body[2]
    nested = next(a for a in f.assignments if a.targets == ("p.grad",))
    assert f.tree.top_statement_through_ifs(nested.ctx.stmt, body) is None  # inside a ``for``


def test_in_one_block():
    f = facts(STEP)
    clip, step = (e for e in f.timeline.events if e.kind in (K.CLIP, K.SCALER_STEP))
    backward = next(e for e in f.timeline.events if e.kind is K.SCALE_BACKWARD)
    assert f.tree.in_one_block([clip.ctx.stmt, step.ctx.stmt, None])
    assert not f.tree.in_one_block([backward.ctx.stmt, step.ctx.stmt])


def test_calls_between_and_by_scope():
    f = facts(STEP)
    backward = next(e for e in f.timeline.events if e.kind is K.SCALE_BACKWARD)
    step = next(e for e in f.timeline.events if e.kind is K.SCALER_STEP)
    between = [site.func_text for site in f.callgraph.calls_between(backward.ctx.scope, backward.order, step.order)]
    assert between == ["scaler.scale", "torch.nn.utils.clip_grad_norm_", "model.parameters"]
    assert f.callgraph.calls_by_scope[backward.ctx.scope][0].func_text == "enumerate"


def test_a_call_inside_an_event_call():
    f = facts(STEP)
    parameters = next(s for s in f.calls if s.func_text == "model.parameters")
    scale = next(s for s in f.calls if s.func_text == "scaler.scale")
    item = next(s for s in f.calls if s.func_text == "loss.item")
    assert f.timeline.inside_event_call(parameters, (K.CLIP,))
    assert f.timeline.inside_event_call(scale, (K.SCALE_BACKWARD,))
    assert not f.timeline.inside_event_call(item, (K.CLIP, K.SCALE_BACKWARD))


def test_argument_references_leave_the_callee_out():
    f = facts("""
    import torch
    for epoch in range(3):
        scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** epoch, growth_interval=cfg.interval)
    """)
    site = f.scaling.scaler_construction_sites[0]
    assert sorted(".".join(r.parts) for r in f.callgraph.argument_references(site)) == ["cfg.interval", "epoch"]


def test_runs_and_their_training_loops():
    f = facts("""
    import torch

    def fit(loader):
        for fold_index in range(5):
            model = Net()
            for epoch in range(10):
                for x in loader:
                    scaler = torch.amp.GradScaler("cuda")
                    scaler.scale(model(x)).backward()

    def sweep(configs, loader, model):
        for cfg in configs:
            opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
            model(loader).backward()
            opt.step()
    """)
    site = f.scaling.scaler_construction_sites[0]
    loops = f.training.training_loops_within_run(site.ctx)
    assert [f.code(loop.node.target) for loop in loops] == ["epoch", "x"]
    fold_loop, epoch_loop = site.ctx.loops[0], site.ctx.loops[1]
    assert f.training.is_run_loop(fold_loop) and not f.training.is_run_loop(epoch_loop)
    sweep = next(fn.scope for fn in f.functions if fn.node.name.value == "sweep")
    fit = next(fn.scope for fn in f.functions if fn.node.name.value == "fit")
    assert f.training.builds_own_optimizer(sweep) and not f.training.builds_own_optimizer(fit)


def test_syntax_helpers():
    call = cst.parse_expression("writer.add_scalar('loss', x)")
    assert S.callee_last_name(call) == "add_scalar"
    assert S.callee_last_name(cst.parse_expression("get()().step()")) == "step"
    chain = cst.parse_statement("if a:\n    x()\nelif b:\n    y()\nelse:\n    z()\n")
    assert len(S.if_chain_blocks(chain)) == 3
