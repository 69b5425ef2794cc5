"""The one place the runtime reads rule metadata (code -> name and summary): the rule catalog,
which reads it from the rule files without importing them (or libcst)."""

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
    from amplint.rules.catalog import rule_catalog

    rule = rule_catalog()[code]
    return RuleInfo(rule.code, rule.name, rule.summary)
