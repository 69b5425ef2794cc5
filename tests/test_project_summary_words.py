"""A module's summary is read from the facts of its focused parse: the definitions the focus
blanks hold nothing a summary records, so the result must equal reading the whole module, for
every effect a summary records."""

from __future__ import annotations

import textwrap

import pytest

from amplint.amp.facts import FileFacts
from amplint.focus import EVENT_TOKENS
from amplint.project.phase import SUMMARY_TOKENS
from amplint.project.summarize import summarize_text

# One function per effect the summary reads from calls, each written the way real helpers are.
EFFECTS = {
    "constructs_scaler": "def make():\n    return torch.cuda.amp.GradScaler()\n",
    "clips": "def clip(model):\n    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n",
    "unscales": "def prepare(s, opt):\n    s.unscale_(opt)\n",
    "scaled_backward": "def back(s, loss):\n    s.scale(loss).backward()\n",
    "steps": "def apply(o):\n    o.zero_grad()\n    o.step()\n",
    "updates": "def finish(s, loss):\n    s.scale(loss)\n    s.update()\n",
    "casts_model (half)": "def convert(model):\n    model.half()\n",
    "casts_model (to)": "def convert(model):\n    return model.to(torch.half)\n",
    "casts_model (bfloat16)": "def convert(model):\n    model.bfloat16()\n",
    "restores_optimizer": "def resume(optimizer, state):\n    optimizer.load_state_dict(state['o'])\n",
    "restored parameter": "def resume(model, state):\n    model.load_state_dict(state)\n",
    "saves (torch.save)": "def write(model, opt, path):\n    torch.save({'model': model.state_dict(), 'optimizer': opt.state_dict()}, path)\n",
    "saves (any .save)": "def keep(accelerator, state):\n    accelerator.save(state, 'ckpt.pt')\n",
    "handed dict": "def keep(model, opt):\n    write_checkpoint({'model': model.state_dict(), 'optim': opt.state_dict()})\n",
    "scaler parameter": "def keep(GRAD_SCALER):\n    pass\n",
}


# Beside each helper, a function the focused parse blanks: the summary must not depend on it.
UNRELATED = "\n\ndef describe(model):\n    return sum(p.numel() for p in model.parameters())\n"


def summaries(source: str):
    """The summary from the whole module's facts, and the one from its focused parse."""
    return FileFacts.from_source(source).project.own, summarize_text(source)


def test_the_focused_parse_keeps_every_definition_a_summary_reads():
    assert set(SUMMARY_TOKENS) <= set(EVENT_TOKENS)


@pytest.mark.parametrize("name", EFFECTS)
def test_every_effect_is_read_from_the_focused_parse(name):
    body_read, with_source = summaries("import torch\n\n" + EFFECTS[name] + UNRELATED)
    assert with_source == body_read
    function = body_read.functions[0]
    assert [f.name for f in with_source.functions] == [function.name, "describe"]
    recorded = {flag for flag, value in vars(function).items() if value not in (False, (), None, "")} - {
        "name", "line", "params", "keyword_only", "defaults"}
    assert recorded, f"{name}: the summary recorded nothing, so the test proves nothing"


def test_a_blanked_function_keeps_its_signature():
    source = textwrap.dedent("""
        class Trainer:
            def log(self, step_name, *values, sep=" ", **extra):
                print(step_name, *values, sep=sep)

        def helper(a, b=1, *, c, d=None):
            return a + b
    """)
    body_read, with_source = summaries(source)
    assert with_source == body_read
    helper = next(f for f in with_source.functions if f.name == "helper")
    assert helper.params == ("a", "b") and helper.keyword_only == ("c", "d") and helper.defaults == ("b", "d")


def test_lines_are_counted_as_ast_counts_them():
    # A form feed or a line separator inside a string is no line break for ast; str.splitlines
    # would shift every later function by a line and read the wrong source.
    source = "x = '\x0c\u2028'\n\ndef write_all(model, opt, path):\n    torch.save({'optimizer': opt.state_dict()}, path)\n"
    body_read, with_source = summaries(source)
    assert with_source == body_read and with_source.functions[0].saves_optimizer
