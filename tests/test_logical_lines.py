"""The logical lines cut from a text for the rule gates, and the gates asked of them."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path
from textwrap import dedent

import pytest

from amplint.engine import lint_text, ruled_out_unparsed
from amplint.focus import physical_lines
from amplint.logical_lines import logical_lines_spelling, masked_code
from amplint.rule_gates import GATES, codes_that_may_report, codes_that_may_report_from_text
from amplint.rules.catalog import all_rules
from amplint.settings import Settings

REPO = Path(__file__).resolve().parent.parent
CUT_CODES = frozenset(GATES) - {"AMP022"}


def _cut(text: str, *numbers: int) -> str | None:
    masked = masked_code(text)
    if masked is None:
        return None
    starts = [0]
    for line in physical_lines(text):
        starts.append(starts[-1] + len(line))
    return logical_lines_spelling(text, masked, starts, sorted(numbers))


SOURCE = dedent('''\
    import torch  # "a quote in a comment
    s = "a ( bracket and a # hash"


    class Rotary(torch.nn.Module):
        """A docstring:
        def not_a_def(
        """

        @torch.autocast("cuda",
                        enabled=False)
        def forward(self, x):
            if x is None:
                pass
            elif x.dtype == torch.float16:  # (
                x = x.float()
            else:
                with torch.autocast(device_type="cuda",  # ) a comment
                                    enabled=False):
                    y = x \\
                        + 1
            try:
                pass
            except (ValueError,
                    TypeError) as error:
                raise
            return f"{x!r} {{literal}}"
''')


def test_a_multi_line_call_is_cut_whole_and_a_header_gets_a_body():
    assert _cut(SOURCE, 18) == (
        'with torch.autocast(device_type="cuda",  # ) a comment\n'
        '                                enabled=False):\n'
        ' pass\n'
    )


def test_a_decorator_a_continued_line_and_headers_that_need_the_one_before_parse_alone():
    cut = _cut(SOURCE, 10, 15, 17, 20, 24, 27)
    assert cut == (
        '@torch.autocast("cuda",\n'
        '                    enabled=False)\n'
        'def _(): pass\n'
        'if x.dtype == torch.float16:  # (\n'
        ' pass\n'
        'if 1:\n'
        ' pass\n'
        'y = x \\\n'
        '                    + 1\n'
        'try: pass\n'
        'except (ValueError,\n'
        '                TypeError) as error:\n'
        ' pass\n'
        'return f"{x!r} {{literal}}"\n'
    )
    ast.parse(cut)


def test_a_line_inside_a_docstring_is_cut_as_the_docstring():
    assert _cut(SOURCE, 7) == '"""A docstring:\n    def not_a_def(\n    """\n'


def test_a_bracket_and_a_hash_inside_a_string_are_not_code():
    assert _cut(SOURCE, 1, 2) == 'import torch  # "a quote in a comment\ns = "a ( bracket and a # hash"\n'


@pytest.mark.parametrize("text", [
    "x = 'unterminated\nwith torch.autocast('cuda'):\n    pass\n",
    'x = """never closed\nwith torch.autocast("cuda"):\n    pass\n',
    # From Python 3.12 an f-string may hold its own quote inside a field: its end is not sure.
    'x = f"{d["a"]}"\nwith torch.autocast("cuda"):\n    pass\n',
    "x = 1\rwith torch.autocast('cuda'):\r    pass\r",
    "x = 1\f\nwith torch.autocast('cuda'):\n    pass\n",
    "x = (1,\nwith torch.autocast('cuda'):\n    pass\n",
    "match x:\n    case torch.autocast:\n        pass\n",
], ids=["quote", "triple quote", "f-string quote", "carriage return", "form feed", "open bracket", "case"])
def test_what_the_lexer_is_unsure_of_is_parsed_whole(text):
    assert _cut(text, *range(1, len(physical_lines(text)) + 1)) is None
    assert codes_that_may_report_from_text(CUT_CODES, text) is None


def _texts() -> list[tuple[str, str]]:
    """Every rule's examples, amplint's own modules and the test fixtures."""
    texts = []
    for code, rule in sorted(all_rules().items()):
        for kind, examples in (("invalid", rule.invalid), ("valid", rule.valid)):
            for index, example in enumerate(examples):
                texts.append((f"{code}-{kind}-{index}", example if isinstance(example, str) else example.code))
    for folder in ("src/amplint", "fixtures"):
        for path in sorted((REPO / folder).rglob("*.py")):
            texts.append((str(path.relative_to(REPO)), path.read_text(encoding="utf-8")))
    return texts


def test_the_gates_give_the_same_verdicts_on_the_cut_lines_as_on_the_whole_tree():
    answered = 0
    texts = _texts()
    for name, text in texts:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # an example's invalid escape sequence
                tree = ast.parse(text)
        except SyntaxError:
            continue
        cut = codes_that_may_report_from_text(CUT_CODES, text)
        if cut is not None:
            answered += 1
            assert cut == codes_that_may_report(CUT_CODES, tree, text=text), name
    assert answered > 0.9 * len(texts)


def test_a_file_found_in_a_directory_and_ruled_out_unparsed_has_no_finding():
    text = dedent("""\
        import torch
        from .utils import maybe_autocast


        def rotary(x, device_type):
            with maybe_autocast(device_type=device_type, enabled=False):  # float32 here
                return x.float().cos()
    """)
    settings = Settings(select=sorted(CUT_CODES))
    assert ruled_out_unparsed(text, "rotary.py", settings)
    assert lint_text(text, "rotary.py", settings).findings == []
    assert not ruled_out_unparsed(text.replace("enabled=False", "enabled=True"), "rotary.py", settings)
    assert not ruled_out_unparsed(text, "rotary.py", Settings(select=sorted(CUT_CODES), prefilter=False))


def test_a_file_ruled_out_unparsed_is_cached(tmp_path, monkeypatch):
    import amplint.rule_gates as rule_gates
    from amplint.jobs import Job, run_jobs

    (tmp_path / "rotary.py").write_text(
        "import torch\n\n\ndef f(x):\n    with torch.autocast('cuda', enabled=False):\n        return x.float()\n")
    asked: list[str] = []
    real = rule_gates.codes_that_may_report_from_text
    monkeypatch.setattr(rule_gates, "codes_that_may_report_from_text", lambda *a, **k: asked.append("cut") or real(*a, **k))
    job = Job(str(tmp_path / "rotary.py"), Settings(root=str(tmp_path)), cache_dir=str(tmp_path / "cache"))
    first = run_jobs([job], 1)
    second = run_jobs([job], 1)
    assert first[0].skipped and second[0].skipped and first[0].findings == second[0].findings == []
    assert asked == ["cut"]  # the second run read the cache


def test_a_file_the_cut_lines_leave_rules_for_is_linted_as_when_its_whole_tree_is_gated(monkeypatch):
    # The gates' answer on the logical lines is handed to the lint, which does not ask the whole
    # tree again: the findings are the same, and the whole-tree gates are not asked.
    import amplint.rule_gates as rule_gates
    from amplint.engine import gated_unparsed

    texts = [p.read_text(encoding="utf-8") for p in sorted((REPO / "fixtures").rglob("*.py"))]
    texts += [example for code in sorted(GATES) for example in _rule_examples(code)]
    compared = 0
    for selection in (Settings(), Settings(select=["ALL"])):
        for text in texts:
            gated = gated_unparsed(text, "a.py", selection)
            if not gated:
                continue
            expected = lint_text(text, "a.py", selection)
            asked: list[int] = []
            real = rule_gates.codes_that_may_report
            monkeypatch.setattr(rule_gates, "codes_that_may_report", lambda *a, **k: asked.append(1) or real(*a, **k))
            got = lint_text(text, "a.py", selection, gated=gated)
            monkeypatch.setattr(rule_gates, "codes_that_may_report", real)
            assert asked == []
            assert [(f.code, f.location, f.message) for f in got.findings] == [(f.code, f.location, f.message) for f in expected.findings]
            compared += 1
    assert compared > 50


def _rule_examples(code: str) -> list[str]:
    rule = all_rules()[code]
    return [example if isinstance(example, str) else example.code for example in (*rule.invalid, *rule.valid)]
