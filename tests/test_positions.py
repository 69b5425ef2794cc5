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
