"""The lowest release a version constraint admits, read without ``packaging``."""

from __future__ import annotations

import pytest

from amplint.version_specifiers import lowest_release


@pytest.mark.parametrize(
    ("specifier", "lowest"),
    [
        (">=2.1", (2, 1)),
        (">= 2.1", (2, 1)),
        (">=2.1,<3", (2, 1)),
        ("<3, >=2.1.2", (2, 1)),
        (">=2", (2, 0)),
        (">=1.13.1", (1, 13)),
        (">=2.10", (2, 10)),  # not 2.1
        ("~=2.1", (2, 1)),
        ("~=2.1.0", (2, 1)),
        ("==2.1.*", (2, 1)),
        ("==2.*", (2, 0)),
        ("==2.1.2", (2, 1)),
        ("===2.1.2", (2, 1)),
        ("==2.1.0+cu118", (2, 1)),
        (">=2.1.0rc1", (2, 1)),
        (">=2.1.0.post1", (2, 1)),
        (">2.1", (2, 1)),  # admits 2.1.1
        (">2.1,>=2.3", (2, 3)),  # both must hold: the higher lower bound
        (">=2.0,!=2.0.*", (2, 1)),
        (">=2.1,!=2.1.0", (2, 1)),  # 2.1.1 is still admitted
        (">=1.13,!=1.*", (2, 0)),
    ],
)
def test_lower_bounds(specifier, lowest):
    assert lowest_release(specifier) == lowest


@pytest.mark.parametrize("specifier", ["<3", "<=2.4", "!=2.1.*", "", "2.1", ">=x", ">=1!2.0", ">=2.1.*"])
def test_no_lower_bound_or_not_understood(specifier):
    assert lowest_release(specifier) is None


@pytest.mark.parametrize(
    ("constraint", "lowest"),
    [
        ("^2.1", (2, 1)),
        ("~2.1", (2, 1)),
        ("2.1", (2, 1)),
        ("2.1.*", (2, 1)),
        (">=2.1 <3.0", (2, 1)),
        (">= 2.1, < 3.0", (2, 1)),
        ("^1.13 || ^2.0", (1, 13)),
    ],
)
def test_poetry_constraints(constraint, lowest):
    assert lowest_release(constraint, poetry=True) == lowest


@pytest.mark.parametrize("constraint", ["*", "<2.4", "^2.1 || <2"])
def test_poetry_constraints_without_a_lower_bound(constraint):
    assert lowest_release(constraint, poetry=True) is None
