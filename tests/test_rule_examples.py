"""Every rule's own examples (class VALID/INVALID lists and its docs) run as tests."""

from __future__ import annotations

import libcst as cst
import pytest

from amplint.engine import lint_text
from amplint.rules import all_rules
from amplint.rules.base import DOC_SECTIONS, Invalid
from amplint.settings import Settings

RULES = all_rules()


def _selection(rule_code: str) -> Settings:
    # A rule about other rules' findings (AMP100, unused noqa) needs them enabled too.
    return Settings(select=(rule_code, *getattr(RULES[rule_code], "examples_also_select", ())))


def _codes(code: str, rule_code: str) -> list[str]:
    result = lint_text(code, "example.py", _selection(rule_code))
    assert not result.errors, result.errors
    return [f.code for f in result.findings]


def _fixed(code: str, rule_code: str, unsafe: bool) -> str:
    result = lint_text(code, "example.py", _selection(rule_code), fix=True, unsafe=unsafe)
    return result.source if result.source is not None else code


def _examples(kind: str):
    for code, rule in RULES.items():
        for index, example in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, example, id=f"{code}-{kind}-{index}")


@pytest.mark.parametrize("rule", RULES.values(), ids=list(RULES))
def test_rule_metadata_and_doc_sections(rule):
    assert rule.name == rule.name.lower() and " " not in rule.name
    assert rule.summary
    docs = rule.documentation()
    for section in DOC_SECTIONS:
        assert f"## {section}" in docs, f"{rule.code} docs lack '## {section}'"
    assert rule.triggers, f"{rule.code} declares no prefilter trigger"
    assert len(rule.valid) >= 2 and len(rule.invalid) >= 2, f"{rule.code} needs VALID and INVALID examples"


@pytest.mark.parametrize("rule", RULES.values(), ids=list(RULES))
def test_docs_example_is_reported_and_use_instead_is_clean(rule):
    bad = rule.doc_code_block("Example")
    good = rule.doc_code_block("Use instead")
    assert bad and good, f"{rule.code}: docs need python code blocks"
    assert rule.code in _codes(bad, rule.code)
    assert rule.code not in _codes(good, rule.code)


@pytest.mark.parametrize("rule, example", list(_examples("valid")))
def test_valid_example_is_clean(rule, example):
    assert rule.code not in _codes(example, rule.code)


@pytest.mark.parametrize("rule, example", list(_examples("invalid")))
def test_invalid_example_is_reported_and_fixed(rule, example):
    example = example if isinstance(example, Invalid) else Invalid(example)
    assert rule.code in _codes(example.code, rule.code)
    fixed = _fixed(example.code, rule.code, unsafe=True)
    if example.fixed is None:
        assert fixed == example.code, "an example without an expected fix must not be rewritten"
        return
    assert fixed == example.fixed
    cst.parse_module(fixed)
    assert _fixed(fixed, rule.code, unsafe=True) == fixed, "fixes must converge"
    if example.unsafe:
        assert _fixed(example.code, rule.code, unsafe=False) != example.fixed
