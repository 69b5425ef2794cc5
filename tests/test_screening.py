"""The prefilter's screening pass: one Aho-Corasick automaton of every screening string finds
exactly the groups that searching each group apart finds, and without ``ahocorasick_rs`` the
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


def _per_group(plan, lowered) -> set[int]:
    as_text = isinstance(lowered, str)
    found = set()
    for index, (needle, is_pattern, _, _) in enumerate(plan.screen):
        if is_pattern:
            hit = selection._pattern(needle, as_text).search(lowered) is not None
        else:
            hit = (needle if as_text else needle.encode("ascii")) in lowered
        if hit:
            found.add(index)
    return found


@pytest.mark.parametrize("codes", [ALL_CODES, DEFAULT_CODES], ids=["ALL", "default"])
def test_the_automaton_finds_the_groups_each_search_finds(codes):
    pytest.importorskip("ahocorasick_rs")
    plan = selection._plan(codes)
    for text in [*OVERLAPPING, *_texts()]:
        for lowered in (text.lower(), text.encode("utf-8", "surrogatepass").lower()):
            assert plan.groups_found(lowered) == _per_group(plan, lowered), text[:80]


def test_a_screening_string_inside_another_ones_occurrence_is_found():
    pytest.importorskip("ahocorasick_rs")
    plan = selection._plan(ALL_CODES)
    strings = {s: index for index, (_, _, _, group) in enumerate(plan.screen) for s in group}
    assert {"scaler", ".scale("} <= set(strings)
    # ``.scale(`` and ``scaler`` overlap in ``.scaler(``: both groups are found.
    assert {strings["scaler"], strings[".scale("]} <= plan.groups_found(b"x.scale(y).scaler(")


@pytest.mark.parametrize("codes", [ALL_CODES, DEFAULT_CODES], ids=["ALL", "default"])
def test_without_the_automaton_the_prefilter_answers_the_same(codes, monkeypatch):
    texts = [*OVERLAPPING, *_texts()]
    with_automaton = [(selection._firing_codes(t, codes), selection._firing_codes(t.encode("utf-8", "surrogatepass"), codes)) for t in texts]
    monkeypatch.setitem(sys.modules, "ahocorasick_rs", None)  # import fails: the per-group searches
    selection._plan.cache_clear()
    try:
        plan = selection._plan(codes)
        assert plan.groups_found("autocast") is None
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
