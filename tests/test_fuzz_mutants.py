"""Fixtures mutated the way code is while someone edits it: lines deleted, duplicated and
re-indented, names swapped, AMP calls spliced in anywhere. Whatever comes out (valid or not),
linting never raises, findings stay inside the file, and fixes compile and converge."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from fuzz_support import check_program

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted(p for p in (ROOT / "fixtures").rglob("*.py"))

# Statements and headers that AMP rules look at, spliced in as whole lines.
AMP_LINES = (
    "scaler.step(opt)",
    "scaler.step(optimizer)",
    "scaler.scale(loss).backward()",
    "scaler.update()",
    "scaler.unscale_(optimizer)",
    "scaler = torch.cuda.amp.GradScaler()",
    "self.scaler = torch.amp.GradScaler('cuda', enabled=amp)",
    "torch.cuda.amp.GradScaler()",
    "loss.backward()",
    "optimizer.step()",
    "optimizer.zero_grad()",
    "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
    "model.half()",
    "model = model.to(torch.bfloat16)",
    "x = torch.is_autocast_enabled()",
    "torch.save({'model': model.state_dict()}, 'ckpt.pt')",
    "loss = torch.nn.functional.binary_cross_entropy(torch.sigmoid(out), y)",
    "from torch.cuda.amp import autocast, GradScaler",
    "import torch.cuda.amp as amp",
)
AMP_HEADERS = (
    'with torch.autocast("cuda"):',
    "with torch.cuda.amp.autocast():",
    'with torch.autocast(device_type="cuda", dtype=torch.float16):',
    "with torch.autocast('cpu', dtype=torch.bfloat16):",
    "with autocast(enabled=False):",
    "for x, y in loader:",
    "if torch.is_autocast_enabled():",
    "def train_step(model, x, y, scaler, optimizer):",
    "@torch.cuda.amp.custom_fwd",
)
# Fragments spliced into the middle of a line (usually breaking it: the syntax-error path).
AMP_FRAGMENTS = ("scaler.step(opt)", "torch.autocast(\"cuda\")", "torch.cuda.amp.GradScaler()", ".half()", "(", ":")
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _delete(lines, index, _data):
    del lines[index]


def _duplicate(lines, index, _data):
    lines.insert(index, lines[index])


def _reindent(lines, index, data):
    width = data.draw(st.sampled_from((0, 4, 8, 12, 16)), label="indent")
    lines[index] = " " * width + lines[index].lstrip(" \t")


def _swap_names(lines, _index, data):
    text = "".join(lines)
    names = sorted(set(_NAME.findall(text)))
    if len(names) < 2:
        return
    first = data.draw(st.sampled_from(names), label="name")
    second = data.draw(st.sampled_from(names), label="other name")
    swapped = _NAME.sub(lambda m: second if m.group() == first else first if m.group() == second else m.group(), text)
    lines[:] = swapped.splitlines(keepends=True)


def _splice_line(lines, index, data):
    indent = data.draw(st.sampled_from((_indent(lines[index]), _indent(lines[index]) + "    ", "")), label="at")
    if data.draw(st.booleans(), label="header"):
        header = data.draw(st.sampled_from(AMP_HEADERS), label="header line")
        body = data.draw(st.sampled_from(AMP_LINES + ("pass",)), label="body line")
        lines[index:index] = [f"{indent}{header}\n", f"{indent}    {body}\n"]
    else:
        lines.insert(index, f"{indent}{data.draw(st.sampled_from(AMP_LINES), label='line')}\n")


def _splice_fragment(lines, index, data):
    line = lines[index]
    at = data.draw(st.integers(0, max(len(line) - 1, 0)), label="column")
    lines[index] = line[:at] + data.draw(st.sampled_from(AMP_FRAGMENTS), label="fragment") + line[at:]


MUTATIONS = (_delete, _duplicate, _reindent, _swap_names, _splice_line, _splice_line, _splice_fragment)


@st.composite
def mutants(draw) -> str:
    path = draw(st.sampled_from(FIXTURES), label="fixture")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True) or ["\n"]
    for _ in range(draw(st.integers(1, 4), label="mutations")):
        if not lines:
            lines = ["\n"]
        index = draw(st.integers(0, len(lines) - 1), label="line")
        draw(st.sampled_from(MUTATIONS), label="mutation")(lines, index, _Drawer(draw))
    return "".join(lines)


class _Drawer:
    """Lets the mutation functions draw from the same example as the strategy."""

    def __init__(self, draw) -> None:
        self.draw = draw


def test_fixtures_exist():
    assert len(FIXTURES) > 100


@given(mutants())
def test_mutated_fixtures_never_crash_and_fix_cleanly(code):
    check_program(code)
