"""Effective lint settings: which rules run on which file, and the torch version targeted."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import PurePath

from amplint.model import SYNTAX_ERROR_CODE

PARSE_ERROR_CODE = SYNTAX_ERROR_CODE  # the code of "this file is not valid Python"


class SelectionError(ValueError):
    pass


# MAJOR[.MINOR[.PATCH]]: plain digits, so "-1.-5" or "2.x" are rejected rather than half-read.
_TORCH_VERSION = re.compile(r"(\d+)(?:\.(\d+)(?:\.\d+)?)?")


def parse_torch_version(text: str) -> tuple[int, int]:
    match = _TORCH_VERSION.fullmatch(str(text).strip())
    if match is None:
        raise SelectionError(f"invalid torch version {text!r} (expected e.g. 2.4)")
    return int(match.group(1)), int(match.group(2) or 0)


def expand_selectors(selectors: tuple[str, ...], known: list[str]) -> set[str]:
    codes: set[str] = set()
    for selector in selectors:
        selector = selector.strip().upper()
        if not selector:
            raise SelectionError('empty rule selector "" (it would select nothing)')
        if selector == "ALL":
            codes.update(known)
            continue
        matched = [code for code in known if code.startswith(selector)]
        if not matched:
            raise SelectionError(f"unknown rule selector {selector!r}")
        codes.update(matched)
    return codes


@dataclass(frozen=True)
class Settings:
    """Everything that decides a run's results: which rules, which torch, which files, which passes."""

    select: tuple[str, ...] = ()  # empty: the rules enabled by default
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    target_torch: tuple[int, int] | None = None  # None: the newest torch
    # The oldest transformers the project admits; None: not known (rules that need it stay silent).
    target_transformers: tuple[int, int] | None = None
    prefilter: bool = True
    root: str = "."  # per-file-ignores globs are relative to this
    # False reports findings despite their ``# noqa`` comments (flake8's --disable-noqa).
    respect_noqa: bool = True
    unfixable: tuple[str, ...] = ()  # rules whose fixes are neither offered nor applied

    def fixable(self, code: str) -> bool:
        return not self.unfixable or code not in _expanded(self.unfixable)
    # False lints each file on its own: calls into other modules of the project are not followed.
    project_analysis: bool = True

    def validate(self) -> None:
        self.enabled_codes()
        known = known_codes()
        expand_selectors(self.unfixable, known)
        for _, codes in self.per_file_ignores:
            expand_selectors(codes, known)

    def enabled_codes(self, filename: str | None = None) -> frozenset[str]:
        registered = _registered_rules()
        # Asked once per file of a run: the part that does not depend on the file is made once
        # per selection and set of rules (a test or a plugin may register more; a rule module
        # imported registers its class in place of its metadata).
        known = self.__dict__.get("_enabled_for")
        if known is not None and known[0] == len(registered):
            codes = known[1]
        else:
            from amplint.rules.catalog import rule_catalog

            codes = _selected_codes(tuple(self.select), tuple(self.extend_select), tuple(self.ignore), tuple(rule_catalog()))
            # Kept on the instance (not a field: equality, hashing and the fingerprint ignore it).
            object.__setattr__(self, "_enabled_for", (len(registered), codes))
        if filename is not None and self.per_file_ignores:
            from amplint.rules.catalog import rule_catalog

            known = list(rule_catalog())
            for pattern, ignored in self.per_file_ignores:
                if _glob_matches(pattern, filename, self.root):
                    codes = codes - expand_selectors(ignored, known)
        return codes

    def fingerprint(self) -> str:
        """A stable digest of everything that changes lint results, for the cache key."""
        import hashlib  # only the cache needs it; it loads OpenSSL
        import json

        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True, default=str).encode()).hexdigest()[:16]


def _registered_rules() -> dict:
    """``amplint.rules.base.RULES``, the rule classes registered so far (imported on first use: an
    import statement run on every call would cost more than the rest of ``enabled_codes``)."""
    global _REGISTERED
    if _REGISTERED is None:
        from amplint.rules.base import RULES

        _REGISTERED = RULES
    return _REGISTERED


_REGISTERED: dict | None = None


@lru_cache(maxsize=32)
def _selected_codes(select: tuple[str, ...], extend_select: tuple[str, ...], ignore: tuple[str, ...],
                    known_codes: tuple[str, ...]) -> frozenset[str]:
    """The codes a selection enables among the rules ``known_codes``."""
    from amplint.rules.catalog import rule_catalog

    rules = rule_catalog()
    known = list(known_codes)
    if select:
        codes = expand_selectors(select, known)
    else:
        codes = {code for code, rule in rules.items() if rule.default_enabled}
    codes |= expand_selectors(extend_select, known)
    codes -= expand_selectors(ignore, known)
    return frozenset(codes)


@lru_cache(maxsize=32)
def _expanded(selectors: tuple[str, ...]) -> frozenset[str]:
    return frozenset(expand_selectors(selectors, known_codes()))


def known_codes() -> list[str]:
    from amplint.rules.catalog import rule_catalog

    return list(rule_catalog())


def _glob_matches(pattern: str, filename: str, root: str) -> bool:
    path = PurePath(filename)
    candidates = {path.as_posix(), path.name}
    try:
        candidates.add(PurePath(filename).relative_to(root).as_posix())
    except ValueError:
        pass
    import os

    try:
        candidates.add(PurePath(os.path.relpath(filename, root)).as_posix())
    except ValueError:
        pass
    return any(fnmatch.fnmatch(candidate, pattern) for candidate in candidates) or any(
        fnmatch.fnmatch(candidate, pattern.rstrip("/") + "/*") for candidate in candidates
    )
