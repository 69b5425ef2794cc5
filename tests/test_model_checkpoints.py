"""Checkpoint contents: what a ``torch.save`` writes, which scalers it should hold, what resume restores."""

from __future__ import annotations

from textwrap import dedent

import libcst as cst

from amplint.amp import FileFacts
from amplint.amp.checkpoints import names_scaler_state, scaler_key_like
from amplint.fix import dicts as D
from amplint.semantic import syntax as S

TRAINER = dedent("""\
    import torch

    def train(model, optimizer, loader, path, scaler=None):
        ckpt = {"model": model.state_dict(), "epoch": 0}
        ckpt["optimizer_state"] = optimizer.state_dict()
        torch.save(ckpt, path)

    def fit(model, optimizer, loader, path):
        scaler = torch.amp.GradScaler("cuda")
        for x, y in loader:
            scaler.scale(model(x)).backward()
            scaler.step(optimizer)
            scaler.update()
        torch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict()}, path)
        state = torch.load(path)
        optimizer.load_state_dict(state['optimizer'])
""")


def _facts(code: str = TRAINER) -> FileFacts:
    return FileFacts.from_source(code)


def test_a_dict_completed_key_by_key_is_read_whole():
    facts = _facts()
    first, second = facts.checkpoints.checkpoint_saves
    built = facts.checkpoints.saved_checkpoint(first)
    assert built.variable == "ckpt" and built.keys == ["model", "epoch", "optimizer_state"]
    assert [facts.code(s).strip() for s in built.optimizer_subscript_stmts] == ['ckpt["optimizer_state"] = optimizer.state_dict()']
    assert S.string_value(facts.checkpoints.subscript_key_node(built.optimizer_subscript_stmts[0])) == "optimizer_state"
    literal = facts.checkpoints.saved_checkpoint(second)
    assert literal.variable is None and literal.keys == ["model", "optimizer"] and not literal.has_spread
    assert [D.quote_of(node) for node in literal.key_nodes] == ["'", "'"]


def test_a_dict_handed_to_other_code_is_unknown():
    facts = _facts(dedent("""\
        import torch
        ckpt = {"optimizer": optimizer.state_dict()}
        add_extra_state(ckpt)
        torch.save(ckpt, path)
    """))
    assert facts.checkpoints.saved_checkpoint(facts.checkpoints.checkpoint_saves[0]) is None


def test_the_scalers_a_checkpoint_should_hold():
    facts = _facts()
    first, second = facts.checkpoints.checkpoint_saves
    # Scalers are known by name: ``train``'s parameter is the file's ``scaler``, but it may be None.
    assert facts.checkpoints.checkpointed_scalers(first.ctx) == ["scaler"]
    assert facts.checkpoints.scaler_may_be_none("scaler", first.ctx)
    assert facts.checkpoints.checkpointed_scalers(second.ctx) == ["scaler"]
    assert not facts.checkpoints.holds_scaler_state(facts.checkpoints.saved_checkpoint(second), ["scaler"])
    assert not facts.checkpoints.scaler_saved_beside(second, ["scaler"])
    assert facts.checkpoints.scaler_created_at("scaler", second.ctx) < second.order
    assert not facts.checkpoints.scaler_may_be_none("scaler", second.ctx)


def test_item_kinds():
    facts = _facts()
    items = facts.checkpoints.saved_checkpoint(facts.checkpoints.checkpoint_saves[1]).items
    assert [facts.checkpoints.is_model_state(k, v) for k, v, _ in items] == [True, False]
    assert [facts.checkpoints.is_optimizer_state(k, v) for k, v, _ in items] == [False, True]
    assert not facts.checkpoints.is_optimizer_state("optimizer", cst.parse_expression("None"))


def test_the_resume_side():
    facts = _facts()
    (restore,) = facts.checkpoints.state_restores
    assert facts.checkpoints.restores_optimizer(restore)
    checkpoint, key, node = facts.checkpoints.checkpoint_lookup(restore)
    assert (checkpoint, key, D.quote_of(node)) == ("state", "optimizer", "'")
    assert not facts.checkpoints.scaler_restored_beside(restore, ["scaler"])
    helper = _facts(TRAINER + "    load_checkpoint(path, model, optimizer, scaler)\n")
    assert helper.checkpoints.scaler_restored_beside(helper.checkpoints.state_restores[0], ["scaler"])


def test_a_scaler_that_may_be_none():
    facts = _facts(dedent("""\
        import torch
        def fit(model, optimizer, use_amp, path):
            scaler = torch.amp.GradScaler("cuda") if use_amp else None
            scaler.scale(model()).backward()
            torch.save({"optimizer": optimizer.state_dict()}, path)
    """))
    save = facts.checkpoints.checkpoint_saves[0]
    assert facts.checkpoints.scaler_may_be_none("scaler", save.ctx)


def test_keys_and_saved_scaler_key():
    assert scaler_key_like("optim_sd") == "scaler_sd" and scaler_key_like("opt") == "scaler"
    assert names_scaler_state("grad_scaler") and names_scaler_state("amp") and not names_scaler_state("optimizer")
    facts = _facts(TRAINER.replace("'optimizer': optimizer.state_dict()}", "'optimizer': optimizer.state_dict(), 'amp_scaler': scaler.state_dict()}"))
    assert facts.checkpoints.saved_scaler_key("scaler", "optimizer") == "amp_scaler"


def test_append_item_keeps_the_dict_layout():
    node = cst.parse_expression("{\n    'a': 1,\n    'b': 2,\n}")
    new = D.append_item(node, D.quoted("c", node.elements[0].key), cst.parse_expression("3"))
    assert cst.Module([]).code_for_node(new) == "{\n    'a': 1,\n    'b': 2,\n    'c': 3,\n}"


def test_none_helpers():
    assert S.may_be_none(cst.parse_expression("a if c else None")) and S.may_be_none(cst.parse_expression("a or None"))
    assert not S.is_none(cst.parse_expression("a or None"))
    function = cst.parse_statement("def f(a, *, scaler=None, b=1): pass")
    assert S.is_none(S.parameter_default(function, "scaler")) and S.parameter_default(function, "a") is None
