"""A module summarised for some of its definitions only, as a call of one imported helper asks."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path
from textwrap import dedent

from amplint.focus import definitions_reached
from amplint.project.context import ProjectIndex
from amplint.project.phase import SUMMARY_TOKENS
from amplint.project.records import FunctionSummary, ModuleSummary
from amplint.project.summarize import summarize_text

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

HELPERS = dedent('''\
    import torch

    CTX = None


    def _state(model, optimizer, scaler):
        return {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scaler": scaler.state_dict()}


    def save_checkpoint(path, model, optimizer, scaler):
        extra = _state(model, optimizer, scaler)
        torch.save({"optimizer": optimizer.state_dict(), "scaler": scaler.state_dict(), "extra": extra}, path)


    def setup(dtype):
        global CTX
        CTX = torch.autocast("cuda", dtype=dtype)


    def current_context():
        return CTX


    def amp_context(dtype):
        return torch.autocast("cuda", dtype=dtype)


    class Base:
        def save(self, path):
            torch.save({"optimizer": self.optimizer.state_dict()}, path)


    class Trainer(Base):
        def __init__(self):
            self.scaler = torch.amp.GradScaler()

        def step(self, loss):
            self.scaler.scale(loss).backward()


    def unrelated(x):
        return torch.save(x, "x.pt")
''')


def _tree(text: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text)


def test_a_definition_reaches_what_it_calls_subclasses_and_the_definitions_that_set_its_globals():
    tree = _tree(HELPERS)
    assert definitions_reached(tree, HELPERS, {"save_checkpoint"}) == {"save_checkpoint", "_state"}
    assert definitions_reached(tree, HELPERS, {"current_context"}) == {"current_context", "setup"}
    assert definitions_reached(tree, HELPERS, {"Trainer"}) == {"Trainer", "Base"}
    assert definitions_reached(tree, HELPERS, {"missing"}) == {"missing"}


def test_the_narrowed_summary_holds_only_the_definitions_asked_for():
    whole = summarize_text(HELPERS)
    narrowed = summarize_text(HELPERS, only=frozenset({"save_checkpoint", "Trainer"}))
    assert narrowed == whole.narrowed(frozenset({"save_checkpoint", "Trainer"}))
    assert [f.name for f in narrowed.functions] == ["save_checkpoint", "Trainer.__init__", "Trainer.step"]
    assert narrowed.function("save_checkpoint").saves_optimizer and narrowed.function("save_checkpoint").saves_scaler
    assert narrowed.scaler_classes == ("Trainer",)
    assert narrowed.imports == whole.imports and narrowed.defined == whole.defined
    # Nothing asked is defined here: no parse, and no function.
    assert summarize_text(HELPERS, only=frozenset({"missing"})) == ModuleSummary(imports=whole.imports, defined=whole.defined)


def test_an_index_narrows_the_whole_summary_when_it_cannot_summarise_a_part(tmp_path):
    (tmp_path / "helpers.py").write_text(HELPERS, encoding="utf-8")
    loaded: list[str] = []
    index = ProjectIndex(tmp_path, load=lambda path: loaded.append(path) or summarize_text(Path(path).read_text()))
    part = index.summary(tmp_path / "helpers.py", frozenset({"amp_context"}))
    assert [f.name for f in part.functions] == ["amp_context"] and part.function("amp_context").autocast is not None
    assert index.summary(tmp_path / "helpers.py") is not None and len(loaded) == 1  # the whole one, read once


def _definitions(text: str) -> list[str]:
    return [s.name for s in _tree(text).body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def test_every_definition_of_the_fixtures_summarised_alone_is_summarised_as_in_the_whole_module():
    compared = 0
    for path in sorted(FIXTURES.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if not any(token in text for token in SUMMARY_TOKENS):
            continue
        try:
            _tree(text)
        except SyntaxError:
            continue
        whole = summarize_text(text)
        for name in _definitions(text):
            assert summarize_text(text, only=frozenset({name})) == whole.narrowed(frozenset({name})), (path, name)
            compared += 1
    assert compared > 300


def test_a_narrowed_summary_keeps_functions_by_their_top_level_name():
    functions = tuple(FunctionSummary(name, 1, ()) for name in ("f", "C.m", "Cx.m", "C"))
    assert [f.name for f in ModuleSummary(functions).narrowed(frozenset({"C"})).functions] == ["C.m", "C"]


def test_a_module_summarised_for_some_definitions_answers_for_fewer_without_a_parse(tmp_path, monkeypatch):
    import amplint.project.phase as phase
    import amplint.project.summarize as summarize

    path = tmp_path / "helpers.py"
    path.write_text(HELPERS, encoding="utf-8")
    monkeypatch.setattr(phase, "_SUMMARIZED", {})
    parsed: list[frozenset | None] = []
    original = summarize.summarize_text
    monkeypatch.setattr(summarize, "summarize_text", lambda text, path="<module>", only=None: parsed.append(only) or original(text, path, only))
    wide = frozenset({"save_checkpoint", "Trainer", "amp_context"})
    assert phase.summarize_path(str(path), only=wide) == summarize_text(HELPERS, only=wide)
    for fewer in ({"save_checkpoint"}, {"Trainer", "amp_context"}, set()):
        assert phase.summarize_path(str(path), only=frozenset(fewer)) == summarize_text(HELPERS, only=frozenset(fewer))
    assert parsed == [wide]
    # One it does not hold, or the whole module, is summarised again.
    phase.summarize_path(str(path), only=frozenset({"setup"}))
    phase.summarize_path(str(path))
    assert parsed == [wide, frozenset({"setup"}), None]
    # A changed file is not answered from the summary of its old text.
    path.write_text(HELPERS + "\n\ndef later():\n    pass\n", encoding="utf-8")
    phase.summarize_path(str(path), only=frozenset({"save_checkpoint"}))
    assert parsed[-1] == frozenset({"save_checkpoint"})
