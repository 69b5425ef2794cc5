"""What the editor and screenshot tests need from the machine: a missing tool skips the test with
its reason, except where AMPLINT_REQUIRE_EDITORS is set (.ci/run sets it after installing them),
where it fails instead, so CI never passes by skipping them."""

from __future__ import annotations

import os

import pytest


def missing(reason: str) -> None:
    if os.environ.get("AMPLINT_REQUIRE_EDITORS"):
        pytest.fail(f"{reason} (AMPLINT_REQUIRE_EDITORS is set)")
    pytest.skip(reason)
