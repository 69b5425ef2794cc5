"""Same-named GradScalers in many functions cost in proportion to the file: counted, never timed.

A file of N functions that each build their own ``scaler`` is linted at N and 4N. What is
counted is how often a variable is compared with another (``Variable.__eq__``: each scaler
construction was matched against every other) and how often an assignment's value is asked
whether it is ``None`` (each scope rescanned every assignment to ``scaler``). At 4N each may grow
about 4 times, not 16.
"""

from __future__ import annotations

import pytest

from amplint.engine import lint_text
from amplint.semantic import identity, syntax
from amplint.settings import Settings

ALL = Settings(select=("ALL",))

FUNCTION = '''

def train_{i}(model, loader, optimizer):
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda"):
            loss = model(x, y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        scaler.step(optimizer)
        scaler.update()
        torch.save({{"model": model.state_dict()}}, "ckpt_{i}.pt")
'''


def training_file(functions: int) -> str:
    return "import torch\n" + "".join(FUNCTION.format(i=i) for i in range(functions))


def _count(monkeypatch, functions: int) -> dict[str, int]:
    counts = {"variable comparisons": 0, "none checks": 0}
    compare, is_none = identity.Variable.__eq__, syntax.is_none

    def counting_compare(self, other):
        counts["variable comparisons"] += 1
        return compare(self, other)

    def counting_is_none(node):
        counts["none checks"] += 1
        return is_none(node)

    with monkeypatch.context() as patch:
        patch.setattr(identity.Variable, "__eq__", counting_compare)
        patch.setattr(syntax, "is_none", counting_is_none)
        lint_text(training_file(functions), "train.py", ALL)
    return counts


@pytest.mark.parametrize("work", ["variable comparisons", "none checks"])
def test_same_named_scalers_cost_grows_linearly(monkeypatch, work):
    small = _count(monkeypatch, 15)[work]
    large = _count(monkeypatch, 60)[work]
    assert large <= 5 * max(small, 10), (small, large)
