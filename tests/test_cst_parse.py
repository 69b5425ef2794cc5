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


def test_a_parse_on_one_thread_leaves_another_threads_nodes_validated():
    started, finished = threading.Event(), threading.Event()
    errors: list[Exception] = []

    def build() -> None:
        started.wait()
        try:
            cst.Name("")
        except cst.CSTValidationError as exc:
            errors.append(exc)
        finished.set()

    thread = threading.Thread(target=build)
    thread.start()
    text = "x = 1\n" * 20000
    started.set()
    parse_module(text)
    finished.wait(10)
    thread.join()
    assert len(errors) == 1
