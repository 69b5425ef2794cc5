"""The prefilter's screening pass: one Aho-Corasick automaton of every token's lower-cased form
finds each token a search for it finds, in bytes and in text, and without ``ahocorasick_rs`` the
prefilter answers the same."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import amplint.selection as selection
from amplint.rules.catalog import rule_catalog
from amplint.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
ALL_CODES = frozenset(rule_catalog())
DEFAULT_CODES = Settings().enabled_codes("a.py")


def _texts() -> list[str]:
    texts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "fixtures").rglob("*.py"))]
    texts += [p.read_text(encoding="utf-8") for p in sorted((ROOT / "src" / "amplint").rglob("*.py"))]
    return texts


# Screening strings that overlap or hold one another's beginnings: a search that reports only
# non-overlapping occurrences would miss one of each pair.
OVERLAPPING = [
    "fullyshardeddataparallel",
    "x.scaler(loss)",
    "opt.unscale_r",
    "import ampere; self.amp",
    "torch.cuda.amp.autocast_mode",
    "FullyShardedDataParallel(model, mixed_precision=MixedPrecision())",
    "accelerator_autocast = deepspeedlightning",
    "TrainingArguments(fp16=True)",
    "\udc80import torch as th\nscaler = th.cuda.amp.GradScaler()",  # a lone surrogate (surrogateescape)
    "",
]


def _searched(plan, text: str) -> dict[str, bool]:
    """Each token searched for in the text apart: a word in the lower-cased text."""
    return {t: (t.lower() in text.lower()) if selection.any_case(t) else t in text for t in plan.tokens}


@pytest.mark.parametrize("codes", [ALL_CODES, DEFAULT_CODES], ids=["ALL", "default"])
def test_the_automaton_finds_in_a_text_each_token_a_search_finds(codes):
    pytest.importorskip("ahocorasick_rs")
    plan = selection._plan(codes)
    for text in [*OVERLAPPING, *_texts()]:
        # A text is searched as its UTF-8 form (lone surrogates kept), as the prefilter does.
        present = plan.tokens_in(text.encode("utf-8", "surrogatepass"), text.lower().encode("utf-8", "surrogatepass"))
        assert present == _searched(plan, text), text[:80]


def test_a_token_inside_another_ones_occurrence_is_found():
    pytest.importorskip("ahocorasick_rs")
    plan = selection._plan(ALL_CODES)
    assert {"autocast", "is_autocast_enabled"} <= set(plan.tokens)
    # ``autocast`` lies inside ``is_autocast_enabled``: a search that reports only occurrences
    # that do not overlap would find one of them; both are found.
    data = b"if torch.is_autocast_enabled():"
    present = plan.tokens_in(data, data.lower())
    assert present["autocast"] and present["is_autocast_enabled"]


@pytest.mark.parametrize("codes", [ALL_CODES, DEFAULT_CODES], ids=["ALL", "default"])
def test_without_the_automaton_the_prefilter_answers_the_same(codes, monkeypatch):
    texts = [*OVERLAPPING, *_texts()]
    with_automaton = [(selection._firing_codes(t, codes), selection._firing_codes(t.encode("utf-8", "surrogatepass"), codes)) for t in texts]
    monkeypatch.setitem(sys.modules, "ahocorasick_rs", None)  # import fails: the per-group searches
    selection._plan.cache_clear()
    try:
        plan = selection._plan(codes)
        assert plan.tokens_in(b"autocast", b"autocast") is None
        without = [(selection._firing_codes(t, codes), selection._firing_codes(t.encode("utf-8", "surrogatepass"), codes)) for t in texts]
    finally:
        selection._plan.cache_clear()
    assert without == with_automaton


MIXED_CASE = [
    "GRAD_SCALER.step(opt)",
    "with self.AutoCast():\n    pass",
    "x = 1  # NoQa: AMP001",
    "from transformers import Trainer, TrainingArguments\nmodel = M.from_pretrained('x', torch_dtype=torch.bfloat16)\n",
    "scaler = GradScaler(); scaler.scale(loss).backward(); scaler.unscale_(opt)",
]


@pytest.mark.parametrize("codes", [ALL_CODES, DEFAULT_CODES], ids=["ALL", "default"])
def test_one_pass_over_the_bytes_finds_each_token_as_a_search_for_it_does(codes):
    pytest.importorskip("ahocorasick_rs")
    plan = selection._plan(codes)
    assert {"autocast", "GradScaler", "Trainer", "bf16"} & set(plan.tokens)
    for text in [*MIXED_CASE, *OVERLAPPING, *_texts()]:
        data = text.encode("utf-8", "surrogatepass")
        present = plan.tokens_in(data, data.lower())
        expected = {t: (t.lower().encode() in data.lower()) if selection.any_case(t) else t.encode() in data for t in plan.tokens}
        assert present == expected, text[:80]


def test_a_word_read_in_any_case_is_found_in_every_spelling():
    pytest.importorskip("ahocorasick_rs")
    plan = selection._plan(ALL_CODES)
    for spelling in ("autocast", "AUTOCAST", "AutoCast", "aUtOcAsT"):
        data = f"with self.{spelling}():".encode()
        assert plan.tokens_in(data, data.lower())["autocast"]
    assert not plan.tokens_in(b"with self.auto_cast():", b"with self.auto_cast():")["autocast"]
