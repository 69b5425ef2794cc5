"""The one place the runtime reads rule metadata (code -> name and summary) from the registry.

Imported lazily: the registry loads every rule module, which the runtime needs only once a
finding is made.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class RuleInfo:
    code: str
    name: str
    summary: str


@lru_cache(maxsize=None)
def rule_info(code: str) -> RuleInfo:
    from amplint.rules import RULES

    rule = RULES[code]
    return RuleInfo(rule.code, rule.name, rule.summary)
