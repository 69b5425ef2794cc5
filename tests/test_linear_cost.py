"""The work amplint does grows linearly with the file: counted, never timed.

A file of N realistic AMP training functions is linted and fixed at N and 4N. What is counted
is what made the cost quadratic before: whole-module parses (and the characters they read) and
whole-module renders checking that a fix parses. At 4N each may grow about 4 times, not 16.
"""

from __future__ import annotations

import libcst
import pytest

import amplint
from amplint.engine import lint_text
from amplint.fix import apply
from amplint.settings import Settings

ALL = Settings(select=("ALL",))

# Four findings with fixes per function (AMP001 twice, AMP003, AMP014), as in real loops.
FUNCTION = '''

def train_{i}(model, loader, optimizer, max_norm=1.0):
    scaler = torch.cuda.amp.GradScaler()
    for step, (x, y) in enumerate(loader):
        optimizer.zero_grad(set_to_none=True)
        with torch.cuda.amp.autocast():
            out = model(x)
            loss = torch.nn.functional.mse_loss(out, y)
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        scaler.step(optimizer)
        scaler.update()
        log_{i}(step, loss)


def log_{i}(step, loss):
    if torch.is_autocast_enabled():
        print("step", step, loss.item())
'''


def training_file(functions: int) -> str:
    return "import torch\n" + "".join(FUNCTION.format(i=i) for i in range(functions))


class Work:
    """Counts whole-module parses and fix renders while the block runs."""

    def __init__(self, monkeypatch) -> None:
        self.parses = self.parsed_chars = self.renders = 0
        parse, render = libcst.parse_module, apply.apply_changes

        def counting_parse(source, *args, **kwargs):
            self.parses += 1
            self.parsed_chars += len(source)
            return parse(source, *args, **kwargs)

        def counting_render(*args, **kwargs):
            self.renders += 1
            return render(*args, **kwargs)

        monkeypatch.setattr(libcst, "parse_module", counting_parse)
        monkeypatch.setattr(apply, "apply_changes", counting_render)


def _measure(monkeypatch, action, functions: int) -> Work:
    with monkeypatch.context() as patch:
        work = Work(patch)
        action(training_file(functions))
    return work


ACTIONS = {
    "fix": lambda code: lint_text(code, "train.py", ALL, fix=True, unsafe=True),
    "edits (json, rdjson)": lambda code: lint_text(code, "train.py", ALL, edits=True),
    "fix_source": lambda code: amplint.fix_source(code, "train.py", {"select": ["ALL"]}, unsafe=True),
}


@pytest.mark.parametrize("name", ACTIONS)
def test_work_grows_linearly(monkeypatch, name):
    small = _measure(monkeypatch, ACTIONS[name], 10)
    large = _measure(monkeypatch, ACTIONS[name], 40)
    assert small.parses >= 1
    # The number of parses and renders does not depend on the number of findings...
    assert large.parses <= small.parses + 2, (small.parses, large.parses)
    assert large.renders <= small.renders + 2, (small.renders, large.renders)
    # ...so the characters parsed grow with the file, 4 times (a little more for rounding).
    assert large.parsed_chars <= 4.5 * small.parsed_chars, (small.parsed_chars, large.parsed_chars)


def test_a_long_line_costs_in_proportion_to_its_length(monkeypatch):
    def one_line(elements: int) -> str:
        return "import torch\nscaler = torch.cuda.amp.GradScaler()\nx = [" + "1, " * elements + "]\n"

    counts = []
    for elements in (500, 2000):
        with monkeypatch.context() as patch:
            work = Work(patch)
            lint_text(one_line(elements), "line.py", ALL, fix=True)
            lint_text(one_line(elements), "line.py", ALL, edits=True)
        counts.append(work)
    small, large = counts
    assert large.parses == small.parses
    assert large.parsed_chars <= 4.5 * small.parsed_chars, (small.parsed_chars, large.parsed_chars)


def test_fixes_are_checked_together_not_one_by_one(monkeypatch):
    code = training_file(40)
    work = _measure(monkeypatch, ACTIONS["fix"], 40)
    findings = len(lint_text(code, "train.py", ALL).findings)
    assert findings == 160
    assert work.renders < 20, work.renders  # one render per pass, not one per fix


def test_edit_formats_cost_a_few_parses_more_than_plain_findings(monkeypatch):
    concise = _measure(monkeypatch, lambda code: lint_text(code, "train.py", ALL), 40)
    edits = _measure(monkeypatch, ACTIONS["edits (json, rdjson)"], 40)
    assert edits.parsed_chars <= 3 * concise.parsed_chars, (concise.parsed_chars, edits.parsed_chars)


def test_eight_hundred_findings_in_one_file_are_fixed_in_a_few_passes(monkeypatch):
    code = "import torch\n" + "".join(f"s{i} = torch.cuda.amp.GradScaler()\n" for i in range(800))
    with monkeypatch.context() as patch:
        work = Work(patch)
        result = lint_text(code, "many.py", ALL, fix=True)
    assert result.fixed_count == 800 and "torch.cuda.amp" not in result.source
    assert work.parses <= 6, work.parses
    assert work.renders <= 4, work.renders


def test_a_fix_that_does_not_parse_costs_a_few_renders_and_spares_the_others():
    """Halving finds the one bad fix among many in about 3 log2(n) renders."""
    import libcst as cst

    from amplint.fix.model import Fix

    module = cst.parse_module("".join(f"x{i} = {i}\n" for i in range(64)))
    names = [stmt.body[0].targets[0].target for stmt in module.body]
    fixes = [Fix.safe("rename", {name: cst.Name(f"y{i}")}) for i, name in enumerate(names)]
    fixes[37] = Fix.safe("break", {names[37]: cst.Name("lambda")})
    target = apply.Target(module, module.code)
    calls = []

    def render(changes):
        calls.append(len(changes))
        return target.render(changes)

    accepted, text, broken = apply.largest_valid(fixes, render)
    assert broken == [fixes[37]] and len(accepted) == 63
    assert "y36 = 36" in text and "x37 = 37" in text
    assert len(calls) <= 3 * 6 + 1, len(calls)  # a render per half and one to join them, per level


def test_disjoint_spans_agree_with_comparing_every_pair():
    import random

    rng = random.Random(5)
    taken = apply.DisjointSpans()
    kept: list = []
    for _ in range(2000):
        line = rng.randint(1, 200)
        span = ((line, rng.randint(0, 10)), (line + rng.randint(0, 3), rng.randint(0, 10)))
        if span[1] < span[0]:
            continue
        expected = any(span[0] <= other[1] and other[0] <= span[1] for other in kept)
        assert taken.overlaps(span) == expected
        if not expected or rng.random() < 0.1:
            kept.append(span)
            taken.add(span)
