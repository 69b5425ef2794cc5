"""Facts behind the GradScaler rules (AMP007-AMP012): exclusive paths, AMP gates, iterations."""

from __future__ import annotations

import textwrap

import libcst as cst

from amplint.amp import FileFacts


def _facts(code: str) -> FileFacts:
    return FileFacts.from_source(textwrap.dedent(code))


def _event(facts: FileFacts, kind: str, index: int = 0):
    return [e for e in facts.timeline.events if e.kind == kind][index]


def test_if_else_branches_are_exclusive_and_straight_line_code_is_not():
    facts = _facts(
        """
        if use_amp:
            scaler.scale(loss).backward()
        else:
            loss.backward()
        optimizer.step()
        """
    )
    scaled, plain, step = _event(facts, "scale_backward"), _event(facts, "backward"), _event(facts, "optimizer_step")
    assert facts.tree.exclusive(scaled.ctx, plain.ctx)
    assert facts.tree.on_path(scaled.ctx, step.ctx) and facts.tree.on_path(plain.ctx, step.ctx)


def test_two_ifs_with_the_same_or_negated_test_are_exclusive():
    facts = _facts(
        """
        def f(scaler, loss, opt):
            if scaler is not None:
                scaler.scale(loss).backward()
            if scaler is None:
                opt.step()
            if not use_amp:
                loss.backward()
            if use_amp:
                scaler.step(opt)
            else:
                opt.zero_grad()
        """
    )
    scaled, step = _event(facts, "scale_backward"), _event(facts, "optimizer_step")
    plain, scaler_step, zero = _event(facts, "backward"), _event(facts, "scaler_step"), _event(facts, "zero_grad")
    assert facts.tree.exclusive(scaled.ctx, step.ctx)
    assert facts.tree.exclusive(plain.ctx, scaler_step.ctx)
    assert not facts.tree.exclusive(plain.ctx, zero.ctx)  # `if not use_amp` body and `if use_amp` else: same path


def test_elif_chain_is_exclusive():
    facts = _facts(
        """
        if mode == "norm":
            scaler.unscale_(opt)
        elif mode == "value":
            scaler.unscale_(opt)
        """
    )
    first, second = _event(facts, "unscale", 0), _event(facts, "unscale", 1)
    assert facts.tree.exclusive(first.ctx, second.ctx)


def test_amp_gate_finds_the_branch_that_selects_the_non_amp_path():
    facts = _facts(
        """
        scaler.scale(loss).backward()
        if args.fp16:
            scaler.step(optimizer)
        else:
            optimizer.step()
        if (i + 1) % accum == 0:
            optimizer.step()
        """
    )
    scaled = _event(facts, "scale_backward")
    gated, accum = _event(facts, "optimizer_step", 0), _event(facts, "optimizer_step", 1)
    assert facts.training.amp_gate(gated.ctx, scaled.ctx) is not None
    assert facts.training.amp_gate(accum.ctx, scaled.ctx) is None
    assert facts.training.accumulation_branch(accum.ctx) is not None
    assert facts.training.accumulation_branch(gated.ctx) is None


def test_iteration_loop_skips_loops_over_optimizers():
    facts = _facts(
        """
        for batch in loader:
            scaler.scale(model(batch)).backward()
            for opt in optimizers:
                scaler.step(opt)
            scaler.update()
        """
    )
    step, update = _event(facts, "scaler_step"), _event(facts, "update")
    outer = facts.training.iteration_loop(update.ctx)
    assert outer is not None and isinstance(outer.node, cst.For)
    assert facts.training.iteration_loop(step.ctx) is outer


def test_backward_scaler_sees_scaled_variables_and_divided_scaled_losses():
    facts = _facts(
        """
        import torch
        scaler = torch.amp.GradScaler("cuda")
        scaled = scaler.scale(loss)
        scaled.backward()
        (scaler.scale(loss) / 2).backward()
        loss.backward()
        """
    )
    backwards = [e for e in facts.timeline.events if e.kind == "backward"]
    assert [facts.scaling.backward_scaler(e) for e in backwards] == ["scaler", "scaler", None]


def test_updating_functions_and_statement_in_block():
    facts = _facts(
        """
        class T:
            def _after(self):
                self.scaler.update()

            def loop(self):
                for b in self.loader:
                    if b:
                        self.scaler.step(self.opt)
                    self._after()
        """
    )
    names = {s.name for s in facts.training.updating_functions}
    assert names == {"_after", "loop"}
    step = _event(facts, "scaler_step")
    loop = facts.training.iteration_loop(step.ctx) or next(iter(facts.loops))
    block = loop.node.body
    holder = facts.tree.statement_in_block(step.ctx.stmt, block)
    assert isinstance(holder, cst.If)
