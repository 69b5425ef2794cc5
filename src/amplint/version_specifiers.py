"""The lowest ``(major, minor)`` release a version constraint admits: ``>=2.1,<3`` -> ``(2, 1)``.

A small reader of PEP 440 specifiers (and Poetry's ``^``/``~``/bare-version/``||`` forms), so
that amplint needs neither ``packaging`` nor torch to learn which torch a project supports.
Only the lower bound matters: ``<``, ``<=`` and ``!=`` alone admit every older release, so a
constraint made only of them gives ``None``, and so does anything this reader does not
understand (an epoch, ``*``): an unknown bound is never guessed.
"""

from __future__ import annotations

import re

Release = tuple[int, int]

# A release with whatever follows it (pre, post, dev, local): 2.1.0rc1+cu118 is in the 2.1 series.
_VERSION = re.compile(r"v?(\d+)(?:\.(\d+))?((?:\.\d+)*)(\.\*)?(?:[-_.]?[a-z]+\d*)*(?:\+[a-z0-9.]+)?", re.I)
_CLAUSE = re.compile(r"\s*(===|==|~=|!=|<=|>=|<|>|\^|~|=)?\s*(\S+?)\s*")


def lowest_release(specifier: str, poetry: bool = False) -> Release | None:
    """The lowest ``(major, minor)`` that ``specifier`` admits, ``None`` if it has no lower bound.

    ``poetry`` also reads Poetry's constraint syntax: ``^2.1``, ``~2.1``, a bare ``2.1``
    (``==2.1``), alternatives joined by ``||`` (the lowest of them).
    """
    if poetry and "||" in specifier:
        bounds = [lowest_release(part, poetry=True) for part in specifier.split("||")]
        # One alternative without a lower bound admits the oldest releases.
        return None if not bounds or None in bounds else min(bounds)  # type: ignore[type-var]
    lower: Release | None = None
    excluded: list[tuple[int, int | None]] = []  # != 2.1.* -> (2, 1); != 2.* -> (2, None)
    if poetry:  # ">= 2.1 < 3": clauses are separated by commas or spaces, an operator may have a space after it
        specifier = re.sub(r"([<>=!~^]+)\s+", r"\1", specifier)
    separators = r"[,\s]+" if poetry else r","
    for clause in (part for part in re.split(separators, specifier.strip()) if part.strip()):
        match = _CLAUSE.fullmatch(clause)
        if match is None:
            return None
        operator, text = match.group(1) or ("==" if poetry else ""), match.group(2)
        if not operator:
            return None  # PEP 440 requires an operator
        version = _VERSION.fullmatch(text)
        if version is None:
            return None
        major, minor = int(version.group(1)), int(version.group(2) or 0)
        wildcard = version.group(4) is not None
        if operator == "!=":
            if wildcard:
                excluded.append((major, int(version.group(2)) if version.group(2) is not None else None))
            continue
        if operator in ("<", "<="):
            continue
        if wildcard and operator not in ("==", "="):
            return None  # only == and != take a wildcard
        bound = (major, minor)
        lower = bound if lower is None else max(lower, bound)
    if lower is None:
        return None
    while True:  # >=2.1,!=2.1.* starts at 2.2
        major, minor = lower
        if (major, minor) in excluded:
            lower = (major, minor + 1)
        elif (major, None) in excluded:
            lower = (major + 1, 0)
        else:
            return lower
