"""Fixes: the values rules return (:class:`Fix`, :class:`NoFix`), edit helpers, and applying them."""

from amplint.fix.model import Applicability, Fix, NoFix, Replacement

__all__ = ["Applicability", "Fix", "NoFix", "Replacement"]
