"""libcst's parse without per-node validation gives the same trees, and only while it parses."""

from __future__ import annotations

import threading
from pathlib import Path

import libcst as cst
import pytest

from amplint.cst_parse import _SKIPPABLE, parse_module

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "fixtures").rglob("*.py"))


def test_the_installed_libcst_validates_only_in_post_init():
    # If libcst's CSTNode.__post_init__ ever does more than validate, nothing is skipped.
    assert _SKIPPABLE


@pytest.mark.parametrize("path", FIXTURES[::4], ids=lambda p: str(p.relative_to(ROOT)))
def test_the_tree_is_the_one_libcst_parses(path):
    text = path.read_text(encoding="utf-8")
    try:
        expected = cst.parse_module(text)
    except cst.ParserSyntaxError:
        with pytest.raises(cst.ParserSyntaxError):
            parse_module(text)
        return
    assert parse_module(text).deep_equals(expected)


def test_nodes_built_outside_a_parse_are_validated():
    parse_module("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")
    with pytest.raises(cst.CSTValidationError):
        cst.SimpleWhitespace("x")


def test_validation_is_skipped_only_on_the_thread_that_parses():
    import amplint.cst_parse as cst_parse

    errors: list[Exception] = []

    def build() -> None:
        try:
            cst.Name("")
        except cst.CSTValidationError as exc:
            errors.append(exc)

    cst_parse._local.parsing = True  # as parse_module sets it while libcst parses on this thread
    try:
        cst.Name("")  # not validated here
        thread = threading.Thread(target=build)
        thread.start()
        thread.join()
    finally:
        cst_parse._local.parsing = False
    assert len(errors) == 1  # validated on the other thread meanwhile
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")  # and here again once the parse is over
