"""The control-flow graph and its path questions, on the loops people write.

Each case names calls by their dotted text and asks the questions a rule asks of them:
does one run after the other in the same iteration (``reaches``), does every path through the
first run the second (``on_every_path``), does one always run first (``dominates``), can a
third run between them (``between``).
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from amplint.amp.facts import FileFacts
from amplint.semantic.cfg import EXIT, FlowGraph


def _places(code: str):
    facts = FileFacts.from_source(textwrap.dedent(code))
    places = {}
    for site in facts.calls:
        places.setdefault(site.func_text, site.ctx)
    return facts.control_flow, places


CORRELATED_AMP = """
def train(model, loader, optimizer, scaler, use_amp, accum_steps):
    for step, batch in enumerate(loader):
        loss = model(batch)
        if use_amp:
            scaler.scale(loss).backward()
        else:
            loss.backward()
        if (step + 1) % accum_steps != 0:
            continue
        if use_amp:
            scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if use_amp:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        optimizer.zero_grad()
"""


def test_branches_on_the_same_flag_are_taken_the_same_way():
    flow, at = _places(CORRELATED_AMP)
    assert flow.reaches(at["scaler.scale"], at["scaler.step"])
    assert not flow.reaches(at["loss.backward"], at["scaler.step"])
    assert not flow.reaches(at["scaler.scale"], at["optimizer.step"])
    assert flow.reaches(at["loss.backward"], at["optimizer.step"])
    assert not flow.may_run_together(at["scaler.update"], at["optimizer.step"])


def test_continue_ends_the_iteration_before_the_step():
    flow, at = _places(CORRELATED_AMP)
    # a micro-batch that continues never reaches the update in its iteration
    assert not flow.on_every_path(at["scaler.scale"], at["scaler.update"])
    assert flow.on_every_path(at["scaler.step"], at["scaler.update"])
    assert flow.on_every_path(at["torch.nn.utils.clip_grad_norm_"], at["optimizer.zero_grad"])


def test_within_an_iteration_a_later_statement_does_not_reach_an_earlier_one():
    flow, at = _places(CORRELATED_AMP)
    assert not flow.reaches(at["scaler.step"], at["scaler.scale"])
    assert flow.reaches(at["scaler.step"], at["scaler.scale"], across_iterations=True)


def test_between_and_dominates():
    flow, at = _places(CORRELATED_AMP)
    clip = at["torch.nn.utils.clip_grad_norm_"]
    assert flow.between(at["scaler.scale"], at["scaler.unscale_"], clip)
    assert not flow.between(at["loss.backward"], at["scaler.unscale_"], clip)
    assert flow.dominates(clip, at["scaler.step"])
    assert not flow.dominates(at["scaler.unscale_"], clip)


def test_reassigning_the_flag_breaks_the_correlation():
    flow, at = _places("""
    def step(model, x, scaler, optimizer, use_amp):
        if use_amp:
            scaler.scale(model(x)).backward()
        use_amp = use_amp and scaler.is_enabled()
        if not use_amp:
            optimizer.step()
    """)
    assert flow.reaches(at["scaler.scale"], at["optimizer.step"])


def test_negated_and_none_tests_are_the_same_test():
    flow, at = _places("""
    class Trainer:
        def train_step(self, batch):
            loss = self.model(batch)
            if self.scaler is not None:
                self.scaler.scale(loss).backward()
            else:
                loss.backward()
            if self.scaler is None:
                self.optimizer.step()
            else:
                self.scaler.step(self.optimizer)
                self.scaler.update()
    """)
    assert not flow.reaches(at["self.scaler.scale"], at["self.optimizer.step"])
    assert not flow.reaches(at["loss.backward"], at["self.scaler.step"])
    assert flow.reaches(at["loss.backward"], at["self.optimizer.step"])


def test_early_return_and_break():
    flow, at = _places("""
    def fit(model, loader, optimizer, scaler, max_steps):
        for step, batch in enumerate(loader):
            if step >= max_steps:
                break
            if batch is None:
                return
            scaler.scale(model(batch)).backward()
            scaler.step(optimizer)
            scaler.update()
        save(model)
    """)
    assert flow.reaches(at["enumerate"], at["save"])
    assert not flow.on_every_path(at["enumerate"], at["save"])  # the early return
    assert flow.on_every_path(at["scaler.step"], at["scaler.update"])
    assert flow.reaches(at["scaler.update"], at["save"])  # the loop ends after its last iteration


def test_one_line_bodies_are_their_own_places():
    flow, at = _places("""
    def step(loss, scaler, optimizer, amp):
        if amp: scaler.scale(loss).backward()
        else: loss.backward()
        if amp: scaler.step(optimizer)
        else: optimizer.step()
    """)
    assert not flow.reaches(at["loss.backward"], at["scaler.step"])
    assert flow.reaches(at["scaler.scale"], at["scaler.step"])


def test_calls_in_one_statement_run_left_to_right():
    flow, at = _places("""
    def step(scaler, optimizer):
        scaler.step(optimizer); scaler.update()
    """)
    assert flow.reaches(at["scaler.step"], at["scaler.update"])
    assert not flow.reaches(at["scaler.update"], at["scaler.step"])


def test_try_handler_and_else_never_run_together():
    flow, at = _places("""
    def step(loss, scaler, optimizer):
        try:
            scaler.scale(loss).backward()
        except RuntimeError:
            recover()
        else:
            scaler.step(optimizer)
        finally:
            scaler.update()
    """)
    assert not flow.may_run_together(at["recover"], at["scaler.step"])
    assert flow.on_every_path(at["recover"], at["scaler.update"])
    assert flow.reaches(at["scaler.scale"], at["recover"])


def test_while_true_ends_only_by_break():
    flow, at = _places("""
    def loop(scaler, optimizer, data):
        while True:
            batch = next(data)
            if batch is None:
                break
            scaler.step(optimizer)
        finish()
    """)
    assert flow.reaches(at["next"], at["finish"])
    assert not flow.reaches(at["scaler.step"], at["finish"])  # leaving needs the next iteration's break


def test_places_in_different_functions_prove_nothing():
    flow, at = _places("""
    def backward(loss):
        loss.backward()

    def step(optimizer):
        optimizer.step()
    """)
    assert not flow.reaches(at["loss.backward"], at["optimizer.step"])
    assert flow.relation_unknown(at["loss.backward"], at["optimizer.step"])


def test_match_cases_are_alternatives():
    flow, at = _places("""
    def step(mode, loss, scaler, optimizer):
        match mode:
            case "amp":
                scaler.scale(loss).backward()
            case _:
                loss.backward()
        optimizer.step()
    """)
    assert not flow.may_run_together(at["scaler.scale"], at["loss.backward"])
    assert flow.on_every_path(at["loss.backward"], at["optimizer.step"])


def _graph(code: str) -> FlowGraph:
    function = cst.parse_module(textwrap.dedent(code)).body[0]
    return FlowGraph.of_body(function)


@pytest.mark.parametrize("code", [
    "def f():\n    return 1\n",
    "def f(x):\n    for a in x:\n        if a:\n            continue\n        break\n    else:\n        pass\n",
    "def f():\n    try:\n        a()\n    except E:\n        raise\n    finally:\n        b()\n",
    "def f():\n    class C:\n        x = 1\n        def m(self):\n            return 2\n    return C\n",
])
def test_every_statement_is_a_node_with_an_edge_out(code):
    graph = _graph(code)
    assert graph.nodes
    for node in graph.nodes:
        assert graph.successors[node], f"{type(node).__name__} has no edge out"
    assert any(edge.target is EXIT for edges in graph.successors.values() for edge in edges) or "raise" in code


def test_leaving_a_nested_loop_does_not_start_the_outer_loop_again():
    flow, at = _places("""
    def train(loader, epochs, scaler, opt_d, opt_g):
        for epoch in range(epochs):
            for batch in loader:
                scaler.step(opt_d)
                clip(batch)
                scaler.update()
        finish()
    """)
    assert not flow.reaches(at["clip"], at["scaler.step"])
    assert flow.reaches(at["clip"], at["finish"])
    assert flow.reaches(at["clip"], at["scaler.step"], across_iterations=True)


def _loops_and_places(code: str):
    facts = FileFacts.from_source(textwrap.dedent(code))
    places = {site.func_text: site.ctx for site in facts.calls}
    return facts.control_flow, places, [loop.node for loop in facts.loops]


def test_a_pass_skips_what_its_own_continue_jumps_over():
    flow, at, (batches, optimizers) = _loops_and_places("""
    def train(model, loader, optimizers, scaler, optim_idx):
        for batch in loader:
            scaler.scale(model(batch)).backward()
            for iopt, optimizer in enumerate(optimizers):
                if iopt != optim_idx:
                    continue
                scaler.step(optimizer)
                scaler.update()
    """)
    assert flow.pass_may_skip(optimizers, at["scaler.update"])
    assert not flow.pass_may_skip(batches, at["scaler.scale"])


def test_continue_after_the_place_or_in_an_inner_loop_skips_nothing():
    flow, at, (optimizers, groups, params) = _loops_and_places("""
    def step_all(optimizers, scaler, max_norm):
        for optimizer in optimizers:  # continue with the next optimizer
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.grad.clamp_(-max_norm, max_norm)
            scaler.step(optimizer)
            scaler.update()
            if not optimizer.param_groups:
                break
    """)
    assert not flow.pass_may_skip(optimizers, at["scaler.update"])
    assert flow.pass_may_skip(params, at["p.grad.clamp_"])
