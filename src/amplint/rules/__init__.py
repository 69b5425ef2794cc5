"""One module per rule; subclassing ``Rule`` registers it.

Importing this package imports no rule module, since they import libcst: ``rule_catalog()``
gives every rule's metadata without them, ``all_rules()`` imports them to run the rules.
"""

from amplint.rules.base import RULES, Rule
from amplint.rules.catalog import all_rules, rule_catalog

__all__ = ["RULES", "Rule", "all_rules", "rule_catalog"]
