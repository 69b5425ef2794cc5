"""amplint's own position computation agrees with libcst's PositionProvider on every node."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from amplint.positions import Positions

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "fixtures").rglob("*.py")) + sorted((ROOT / "src" / "amplint").rglob("*.py"))
SAMPLES = [
    "x = (\r\n    1,\r\n)\r\n",
    "s = '''a\nb\n'''  # comment\nif x:\n\tpass\n",
    "def f(a, *, b=1) -> int:\n    return a \\\n        + b\n",
]


def _compare(module: cst.Module) -> None:
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    mine = Positions(module)
    for node, position in expected.items():
        assert mine[node] == position, type(node).__name__


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_positions_match_libcst_on_real_files(path):
    _compare(cst.parse_module(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("code", SAMPLES)
def test_positions_match_libcst_on_odd_layouts(code):
    _compare(cst.parse_module(code))


def _compare_placed_by_code(module: cst.Module, text: str) -> int:
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    mine = Positions(module, text)
    placed = 0
    for node, position in expected.items():
        found = mine._placed_by_its_code(node)
        if found is not None:
            assert found == position, (type(node).__name__, module.code_for_node(node))
            placed += 1
    assert mine._spans is None  # nothing was generated for the module as a whole
    return placed


@pytest.mark.parametrize("path", SOURCES[::7], ids=lambda p: str(p.relative_to(ROOT)))
def test_an_expression_placed_by_its_code_is_where_libcst_puts_it(path):
    text = path.read_text(encoding="utf-8")
    _compare_placed_by_code(cst.parse_module(text), text)


@pytest.mark.parametrize("code", [
    *SAMPLES,
    # Continuation lines take the block's indentation, which an expression's code alone does not have.
    "def f():\n    torch.save(\n        x)\ntorch.save(\nx)\n",
    "a = b\r\nif c:\r\n    d = (e)\r\n    f = e\r\n",
    "x = 'é' + y\nz = y\n",
])
def test_an_expression_placed_by_its_code_on_odd_layouts(code):
    _compare_placed_by_code(cst.parse_module(code), code)


def test_most_nodes_a_summary_asks_about_are_placed_by_their_code():
    text = "import torch\n\n\ndef save(model, path):\n    torch.save({'model': model.state_dict()}, path)\n"
    module = cst.parse_module(text)
    positions = Positions(module, text)
    call = module.body[1].body.body[0].body[0].value
    assert positions[call].start.line == 5 and positions._spans is None
