"""Shared by the runtime-truth tests that drive the real Accelerate: a fresh Accelerator state per
test, and running a loop given as source text."""

from __future__ import annotations

import pytest
from accelerate.state import AcceleratorState


@pytest.fixture(autouse=True)
def fresh_state():
    """Accelerate keeps its state in process-wide singletons: each test starts from none."""
    AcceleratorState._reset_state(True)
    yield
    AcceleratorState._reset_state(True)


def run_source(source: str, name: str = "<loop>"):
    """The result of ``run()`` defined by ``source``."""
    namespace: dict = {}
    exec(compile(source, name, "exec"), namespace)
    return namespace["run"]()
