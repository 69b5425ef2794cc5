"""Statements in their blocks, and whether one dotted name names one variable in two places."""

from __future__ import annotations

from textwrap import dedent

from amplint.amp import FileFacts


def _facts(code: str) -> FileFacts:
    return FileFacts.from_source(dedent(code), "train.py")


def _site(facts: FileFacts, text: str):
    return next(s for s in facts.calls if s.func_text == text)


def test_next_statement_and_assigned_name():
    facts = _facts("""\
        model = AutoModel.from_pretrained("gpt2")
        trainer = Trainer(model=model); trainer.train()
        def run():
            prepare()
    """)
    load = _site(facts, "AutoModel.from_pretrained")
    assert facts.statements.next_statement(load.ctx.stmt) is _site(facts, "Trainer").ctx.stmt
    assert facts.statements.assigned_name(load) == "model"
    # two statements on one line have no single successor; the last one of a block has none
    assert facts.statements.next_statement(_site(facts, "Trainer").ctx.stmt) is None
    assert facts.statements.next_statement(_site(facts, "prepare").ctx.stmt) is None
    assert facts.statements.assigned_name(_site(facts, "prepare")) is None


def test_same_variable_across_scopes():
    facts = _facts("""\
        model = Net()
        opt = torch.optim.SGD(model.parameters())

        def train(loader):
            for x in loader:
                model(x)

        def evaluate(model, loader):
            model(loader)

        class Trainer:
            def setup(self):
                self.net = Net()

            def step(self, x):
                self.net(x)
    """)
    module_level = _site(facts, "torch.optim.SGD").ctx
    calls = [s for s in facts.calls if s.func_text == "model"]
    in_train, in_evaluate = calls
    assert facts.identity.same_variable("model", in_train.ctx, module_level)
    assert not facts.identity.same_variable("model", in_evaluate.ctx, module_level)  # a parameter of its own
    assert not facts.identity.same_variable("model", in_train.ctx, in_evaluate.ctx)
    setup = [s for s in facts.calls if s.func_text == "Net"][-1].ctx
    step = _site(facts, "self.net").ctx
    assert facts.identity.same_variable("self.net", step, setup)
    assert not facts.identity.same_variable("self.net", step, module_level)
