"""The possible values of an expression, as far as the syntax shows."""

from __future__ import annotations

import libcst as cst


def value_calls(value: cst.BaseExpression | None) -> list[cst.Call]:
    """Calls that ``value`` may evaluate to, through ``a if c else b`` and ``a or b``."""
    if isinstance(value, cst.Call):
        return [value]
    if isinstance(value, cst.IfExp):
        return value_calls(value.body) + value_calls(value.orelse)
    if isinstance(value, cst.BooleanOperation):
        return value_calls(value.left) + value_calls(value.right)
    return []


def is_choice(value: cst.BaseExpression | None) -> bool:
    """``value`` picks one of several expressions (a conditional or boolean expression)."""
    return isinstance(value, (cst.IfExp, cst.BooleanOperation))
