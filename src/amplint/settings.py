"""Effective lint settings: which rules run on which file, and the torch version targeted."""

from __future__ import annotations

import fnmatch
import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import PurePath

PARSE_ERROR_CODE = "AMP000"


class SelectionError(ValueError):
    pass


def parse_torch_version(text: str) -> tuple[int, int]:
    parts = str(text).strip().split(".")
    try:
        major, minor = int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        raise SelectionError(f"invalid torch version {text!r} (expected e.g. 2.4)") from None
    return major, minor


def _expand(selectors: tuple[str, ...], known: list[str]) -> set[str]:
    codes: set[str] = set()
    for selector in selectors:
        selector = selector.strip().upper()
        if not selector:
            continue
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
    select: tuple[str, ...] = ()  # empty: the rules enabled by default
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    target_torch: tuple[int, int] | None = None  # None: the newest torch
    prefilter: bool = True
    root: str = "."  # per-file-ignores globs are relative to this
    # False reports findings despite their ``# noqa`` comments (flake8's --disable-noqa).
    respect_noqa: bool = True

    def validate(self) -> None:
        self.enabled_codes()
        known = _known_codes()
        for _, codes in self.per_file_ignores:
            _expand(codes, known)

    def enabled_codes(self, filename: str | None = None) -> frozenset[str]:
        from amplint.rules import all_rules

        rules = all_rules()
        known = list(rules)
        if self.select:
            codes = _expand(self.select, known)
        else:
            codes = {code for code, rule in rules.items() if rule.default_enabled}
        codes |= _expand(self.extend_select, known)
        codes -= _expand(self.ignore, known)
        if filename is not None:
            for pattern, ignored in self.per_file_ignores:
                if _glob_matches(pattern, filename, self.root):
                    codes -= _expand(ignored, known)
        return frozenset(codes)

    def fingerprint(self) -> str:
        """A stable digest of everything that changes lint results, for the cache key."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True, default=str).encode()).hexdigest()[:16]


def _known_codes() -> list[str]:
    from amplint.rules import all_rules

    return list(all_rules())


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
