"""libcst's parse of a module without validating each node as the parser builds it.

libcst checks every node it constructs (``CSTNode.__post_init__`` calls ``_validate``: each
whitespace string against a pattern, parentheses paired...). For a node its own parser built
from text that Python's parser accepted the checks cannot fail, and they were an eighth of the
parse of a large trainer. libcst says as much where it makes them ("It might make more sense to
move validation work into the visitor, which would allow us to avoid validating the tree when
parsing a file"). :func:`parse_module` skips them, on this thread and only while it parses:
the nodes a fix builds are validated as before. The switch is a wrapper around libcst's
``__post_init__``, installed when this module is imported and left in place: in a process that
also builds libcst nodes for itself (a flake8 run with other plugins), each of them is validated
as before, at the cost of one more function call.
"""

from __future__ import annotations

import threading

import libcst as cst
from libcst._nodes.base import CSTNode

_local = threading.local()
_validating_post_init = CSTNode.__post_init__
# Only a ``__post_init__`` that does nothing but validate may be skipped.
_SKIPPABLE = getattr(_validating_post_init, "__code__", None) is not None and \
    _validating_post_init.__code__.co_names == ("_validate",)


def _post_init(self) -> None:
    if not getattr(_local, "parsing", False):
        _validating_post_init(self)


if _SKIPPABLE:
    CSTNode.__post_init__ = _post_init


def parse_module(text: str) -> cst.Module:
    """``cst.parse_module(text)``, its nodes not validated one by one (the same tree)."""
    if not _SKIPPABLE:
        return cst.parse_module(text)
    _local.parsing = True
    try:
        return cst.parse_module(text)
    finally:
        _local.parsing = False
