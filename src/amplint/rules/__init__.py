"""Every rule module in this package registers its rule on import."""

import importlib
import pkgutil

from amplint.rules.base import RULES, Rule, all_rules

for _module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _module.name.startswith("amp"):
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["RULES", "Rule", "all_rules"]
