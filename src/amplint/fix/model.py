"""What a rule hands the fixer: a :class:`Fix` (node replacements), or a :class:`NoFix` reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Union

import libcst as cst

from amplint.model import Applicability

Replacement = Union[cst.CSTNode, cst.FlattenSentinel, cst.RemovalSentinel]


@dataclass
class Fix:
    """Node replacements applied together; ``group`` merges identical fixes of several findings."""

    applicability: Applicability
    message: str
    changes: Mapping[cst.CSTNode, Replacement]
    group: str | None = None

    @classmethod
    def safe(cls, message: str, changes: Mapping[cst.CSTNode, Replacement], group: str | None = None) -> "Fix":
        return cls(Applicability.SAFE, message, dict(changes), group)

    @classmethod
    def unsafe(cls, message: str, changes: Mapping[cst.CSTNode, Replacement], group: str | None = None) -> "Fix":
        return cls(Applicability.UNSAFE, message, dict(changes), group)


@dataclass(frozen=True)
class NoFix:
    """Why a finding has no fix; shown to users after the finding."""

    reason: str
