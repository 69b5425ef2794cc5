"""The prefilter and the focused parse never change results: with and without them, findings are identical.

"The prefilter" is both the skip of whole files and, in a file that gets through, the skip of
each rule none of whose triggers occurs in it, and its second stage (``amplint.rule_gates``): the
skip of each rule that Python's ``ast`` of the file proves cannot report, and of the libcst parse
when no rule is left. Both the default rules and ``--select ALL`` are compared: the second stage
skips whole files mostly under the default rules.

Runs over every fixture, and over the real-world bench corpus when it has been
downloaded (``python bench/corpus.py``; ``AMPLINT_BENCH_CACHE`` overrides the
location): a fixed sample of the files the prefilter lets through (all of them with
``AMPLINT_PREFILTER_SURVIVORS=all``), plus a fixed sample of the files it skips, linted
on every core.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import re
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from amplint.engine import lint_text, may_have_findings
from amplint.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
ON = Settings(select=("ALL",), prefilter=True)
OFF = Settings(select=("ALL",), prefilter=False)
DEFAULT_ON = Settings(prefilter=True)
DEFAULT_OFF = Settings(prefilter=False)
SELECTIONS = {"ALL": (ON, OFF), "default": (DEFAULT_ON, DEFAULT_OFF)}
CORPUS = Path(os.environ.get("AMPLINT_BENCH_CACHE", Path.home() / ".cache" / "amplint-bench")) / "src"
# Enough survivors that every rule's triggers occur many times over, few enough for CI; the
# transformers model files that make up most survivors differ little from each other.
SURVIVOR_SAMPLE = 1500
SKIPPED_SAMPLE = 150


def _summary(text: str, name: str, settings: Settings) -> list[tuple]:
    result = lint_text(text, name, settings, edits=False)
    return [(f.code, f.location.row, f.location.column, f.message, f.fix is not None) for f in result.findings]


def _fixture_files() -> list[Path]:
    return sorted(p for p in (ROOT / "fixtures").rglob("*.py"))


@pytest.mark.parametrize("selection", SELECTIONS)
@pytest.mark.parametrize("path", _fixture_files(), ids=lambda p: str(p.relative_to(ROOT / "fixtures")))
def test_fixture_results_do_not_depend_on_the_prefilter(path, selection):
    text = path.read_text(encoding="utf-8")
    on, off = SELECTIONS[selection]
    assert _summary(text, path.name, on) == _summary(text, path.name, off)


def _corpus_sample() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    files = sorted(CORPUS.rglob("*.py"))
    survivors, skipped = [], []
    for path in files:
        data = path.read_bytes()
        (survivors if may_have_findings(data, ON, str(path)) else skipped).append(path)
    rng = random.Random(20261130)
    rng.shuffle(skipped)
    if os.environ.get("AMPLINT_PREFILTER_SURVIVORS") != "all":
        rng.shuffle(survivors)
        survivors = sorted(survivors[:SURVIVOR_SAMPLE])
    return survivors + skipped[:SKIPPED_SAMPLE]


def _difference(path: Path) -> tuple[tuple | None, int]:
    """A difference between the runs with and without the prefilter, if any, under either
    selection; and how many of the two runs with it left the file unparsed by the second stage."""
    text = path.read_text(encoding="utf-8", errors="replace")
    unparsed = 0
    for name, (on, off) in SELECTIONS.items():
        with_prefilter, without = _summary(text, str(path), on), _summary(text, str(path), off)
        if with_prefilter != without:
            return (name, str(path), with_prefilter, without), unparsed
        unparsed += _second_stage_skips(text, str(path), on)
    return None, unparsed


def _second_stage_skips(text: str, name: str, settings: Settings) -> bool:
    """The file passes the first stage and the second leaves it no rule to run."""
    import ast

    from amplint.rule_gates import codes_that_may_report
    from amplint.selection import codes_to_run

    if not may_have_findings(text, settings, name):
        return False
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return not codes_that_may_report(codes_to_run(text, settings, settings.enabled_codes(name)), tree)


@pytest.mark.slow
def test_corpus_results_do_not_depend_on_the_prefilter():
    sample = _corpus_sample()
    if not sample:
        pytest.skip(f"bench corpus not downloaded at {CORPUS} (python bench/corpus.py)")
    # spawn, not fork: the test process may hold torch's thread pools by now.
    with ProcessPoolExecutor(os.cpu_count() or 1, mp_context=multiprocessing.get_context("spawn")) as pool:
        outcomes = list(pool.map(_difference, sample, chunksize=8))
    assert [d for d, _ in outcomes if d is not None] == []
    # The comparison covers the second stage: on the speed corpus dozens of files are not parsed.
    assert sum(unparsed for _, unparsed in outcomes) > 0


def test_the_prefilter_searches_for_each_trigger_that_contains_no_other():
    # "Some trigger occurs" is the same question when a trigger that contains another is dropped.
    from amplint.rules.catalog import rule_catalog
    from amplint.selection import ANY_CASE_WORDS, any_case_prefilter_for, prefilter_for

    codes = frozenset(rule_catalog())
    declared = {t.encode("ascii") for rule in rule_catalog().values() for t in rule.triggers}
    searched = set(prefilter_for(codes))
    words = set(any_case_prefilter_for(codes))
    assert searched <= declared
    assert words == {t.lower() for t in declared if t.lower().decode() in ANY_CASE_WORDS}
    for token in declared - searched:
        assert any(kept in token for kept in searched) or any(word in token.lower() for word in words), token
    for token in searched:
        assert not any(other != token and other in token for other in searched)
        assert not any(word in token.lower() for word in words)
    assert {b"GradScaler", b"is_autocast_enabled"} <= declared - searched
    assert words == {b"autocast", b"noqa", b"scaler"}  # the three of today


# Files whose only trigger is a word the facts read in any case, spelled so that no trigger
# occurs as declared: each has findings with the prefilter off, so it must pass the prefilter.
ANY_CASE_FILES = {
    "upper-case scaler receiver": (
        "from helpers import make_amp_state\n\nGRAD_SCALER = make_amp_state()\n\n\n"
        "def train(model, opt, loader):\n    for x, y in loader:\n        opt.zero_grad()\n"
        "        loss = model(x).sum()\n        loss.backward()\n        GRAD_SCALER.step(opt)\n"
    ),
    "with item named AutoCast": (
        "import torch\n\n\nclass Trainer:\n    def train(self, model, opt, loader):\n"
        "        for x in loader:\n            with self.AutoCast():\n                loss = model(x).sum()\n"
        "                loss.backward()\n            opt.step()\n"
    ),
    "mixed-case noqa": "import torch\nx = torch.ones(3)  # Noqa: AMP001\n",
}


@pytest.mark.parametrize("selection", SELECTIONS)
@pytest.mark.parametrize("name", ANY_CASE_FILES)
def test_a_trigger_word_read_in_any_case_passes_the_prefilter_in_any_case(name, selection):
    text = ANY_CASE_FILES[name]
    on, off = SELECTIONS[selection]
    expected = _summary(text, "a.py", off)
    if name == "mixed-case noqa" and selection == "default":
        assert expected == []  # AMP100 is not a default rule
    else:
        assert expected, "the case shows nothing without the prefilter"
        assert may_have_findings(text.encode(), on, "a.py")
        assert may_have_findings(text, on, "a.py")
    assert _summary(text, "a.py", on) == expected


def test_the_focused_parse_keeps_a_definition_whose_only_token_is_an_any_case_word():
    from amplint.focus import focus_source

    text = ("import torch\n\n\ndef unrelated():\n    return 1\n\n\n"
            "def forward(self, x):\n    with self.AUTOCAST():\n        return self.m(x)\n")
    focused = focus_source(text, ("autocast",))
    assert focused is not None
    assert "AUTOCAST" in focused and "unrelated" not in focused


def test_a_file_with_a_rules_trigger_but_not_all_it_requires_is_skipped_for_that_rule():
    from amplint.selection import rules_to_run

    settings = Settings(select=("AMP022",))
    without_backward = b"from accelerate import Accelerator\naccelerator = Accelerator(mixed_precision='fp16')\n"
    assert not may_have_findings(without_backward, settings, "a.py")
    with_backward = without_backward + b"loss.backward()\noptimizer.step()\n"
    assert may_have_findings(with_backward, settings, "a.py")
    assert [rule.code for rule in rules_to_run(with_backward.decode(), settings, frozenset({"AMP022"}))] == ["AMP022"]
    assert rules_to_run(without_backward.decode(), settings, frozenset({"AMP022"})) == ()


NOQA_COMMENTS = [
    "# noqa", "# NOQA", "# noqa: E501", "# noqa:E501,W291", "# noqa: AMP001", "#noqa:amp003",
    "# noqa: E501, AMP005 kept", "# NoQA : F401 AMP100", "# noqa: AMPX1", "# noqa: XAMP1",
    "# type: ignore  # noqa: AMP001, AMP003 legacy", "# ruff: noqa: AMP001", "# noqa AMP001",
    "# Noqa: AMP001", "# nOQA: E501",
]


@pytest.mark.parametrize("comment", NOQA_COMMENTS)
def test_amp100_is_skipped_exactly_when_no_directive_names_an_amplint_code(comment):
    from amplint import noqa
    from amplint.selection import rules_to_run

    text = f"import torch\nx = torch.ones(3)  {comment}\n"
    directive = noqa.row_directives(text).get(2)
    names_amp = directive is not None and any(code.startswith("AMP") for code in directive.codes or ())
    settings = Settings(select=("AMP100",))
    assert may_have_findings(text.encode(), settings, "a.py") == names_amp
    assert bool(rules_to_run(text, settings, frozenset({"AMP100"}))) == names_amp
    # Skipping changes nothing: the findings are those of the full run.
    off = Settings(select=("AMP100",), prefilter=False)
    assert lint_text(text, "a.py", settings).findings == lint_text(text, "a.py", off).findings


def test_a_file_whose_directives_name_other_tools_codes_is_not_parsed_under_select_all():
    text = "import os  # noqa: F401\nx = 1  # noqa: E501\ny = 2  # noqa\n"
    assert lint_text(text, "a.py", ON).skipped
    assert not lint_text(text + "z = 3  # noqa: AMP005\n", "a.py", ON).skipped


@pytest.mark.parametrize("text", [
    "import torch\n# café\nwith torch.autocast('cuda'):\n    loss.backward()\n",
    "# NOQA: AMP001 — é\nfrom torch.cuda.amp import autocast\n",
    "x = 'İ Kelvin'\nGRAD_SCALER.step(opt)  # ü\n",
    "s = 'ſcaler ꜱcaler'\nprint(s)\n",
])
def test_what_the_bytes_showed_stands_for_the_decoded_text(text):
    # The engine asks about the bytes of a file, then about its decoded text; the tokens (and, for
    # an ASCII file, the answer) found in the bytes are carried over, and must be what the text gives.
    import amplint.selection as selection
    from amplint.selection import codes_to_run, same_tokens

    for settings in (ON, DEFAULT_ON):
        codes = settings.enabled_codes("a.py")
        data = text.encode("utf-8")
        selection._last_answer = (None, None, frozenset(), None)
        fresh = codes_to_run(text, settings, codes)
        selection._last_answer = (None, None, frozenset(), None)
        may_have_findings(data, settings, "a.py")
        same_tokens(data, text)
        assert codes_to_run(text, settings, codes) == fresh


_AMP001_AS_WRITTEN = r"\bamp\b|autocast_(?:gpu|cpu)_"


@pytest.mark.parametrize("text", [
    "amp", "x.amp", "from torch.cuda import amp", "camp", "amps", "_amp", "amp_", "a.amp.b", "\u00e9amp", "amp\u00e9",
    "torch._C._autocast_gpu_dtype", "autocast_cpu", "autocast_gpu_", "example", "", "aamp", "a amp",
])
def test_amp001_required_pattern_matches_what_its_plain_spelling_matches(text):
    from amplint.rules.catalog import rule_catalog

    pattern = rule_catalog()["AMP001"].requires_match
    assert (re.search(pattern, text) is not None) == (re.search(_AMP001_AS_WRITTEN, text) is not None)
    data = text.encode("utf-8")
    assert (re.search(pattern.encode(), data) is not None) == (re.search(_AMP001_AS_WRITTEN.encode(), data) is not None)
