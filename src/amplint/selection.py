"""Which rules run on a file: the enabled codes' rules, the prefilter's trigger substrings, and
the tokens the focused parse keeps."""

from __future__ import annotations

from functools import lru_cache

from amplint.settings import Settings


@lru_cache(maxsize=64)
def rules_for(codes: frozenset[str]) -> tuple[type, ...]:
    """The rule classes of ``codes`` in code order, importing only the modules that define them."""
    import importlib

    from amplint.rules.base import RULES

    for rule in metadata_for(codes):
        if rule.code not in RULES:
            importlib.import_module(rule.module)
    return tuple(RULES[code] for code in sorted(codes) if code in RULES)


def rules_to_run(text: str, settings: Settings, codes: frozenset[str]) -> tuple[type, ...]:
    """The enabled rules that can fire on ``text``.

    The prefilter's contract holds per rule: a rule none of whose triggers occurs in the text
    cannot report anything in it, so it is neither imported nor run. Facts and the focused
    parse still come from every enabled rule, so the rules that do run see the same input.
    """
    return rules_for(codes_to_run(text, settings, codes))


def codes_to_run(text: str, settings: Settings, codes: frozenset[str]) -> frozenset[str]:
    """The codes of :func:`rules_to_run`, read from the rules' metadata without importing them."""
    if settings.prefilter:
        codes = frozenset(rule.code for rule in metadata_for(codes) if _may_fire(rule, text))
    return codes


def _may_fire(rule, text: str | bytes) -> bool:
    """Whether ``text`` holds one of the rule's triggers (if it declares any), all it requires, and
    a match of its required pattern."""
    as_text = isinstance(text, str)

    def occurs(token: str) -> bool:
        return (token if as_text else token.encode("ascii")) in text

    if rule.triggers and not any(map(occurs, rule.triggers)) or not all(map(occurs, rule.requires)):
        return False
    return not rule.requires_match or _pattern(rule.requires_match, as_text).search(text) is not None


@lru_cache(maxsize=64)
def _pattern(source: str, as_text: bool):
    import re

    return re.compile(source if as_text else source.encode("ascii"))


@lru_cache(maxsize=64)
def metadata_for(codes: frozenset[str]) -> tuple:
    """The enabled rules' metadata, read without importing the rule modules."""
    from amplint.rules.catalog import rule_catalog

    return tuple(rule for code, rule in rule_catalog().items() if code in codes)


@lru_cache(maxsize=64)
def prefilter_for(codes: frozenset[str]) -> tuple[bytes, ...] | None:
    """The enabled rules' declared trigger substrings; ``None`` disables prefiltering.

    Plain substring tests (``in``, a memory search in C) are several times faster
    than one alternation regex over the same tokens, and run on raw bytes so that
    skipped files are never decoded.
    """
    triggers: set[bytes] = set()
    for rule in metadata_for(codes):
        if not rule.triggers:
            return None  # a rule that declares no trigger must see every file
        triggers.update(t.encode("ascii") for t in rule.triggers)
    # A trigger that contains another (``GradScaler``, ``Scaler``) adds nothing to "some
    # trigger occurs", and every file that fails the prefilter is searched for each trigger.
    return tuple(sorted(t for t in triggers if not any(other != t and other in t for other in triggers)))


@lru_cache(maxsize=64)
def focus_tokens_for(codes: frozenset[str]) -> tuple[str, ...] | None:
    triggers = prefilter_for(codes)
    if triggers is None:
        return None
    extra = {token for rule in metadata_for(codes) for token in (*rule.focus_tokens, *rule.requires)}
    return tuple(sorted({t.decode("ascii") for t in triggers} | extra))


def may_have_findings(data: bytes | str, settings: Settings, filename: str) -> bool:
    """False when no enabled rule's trigger occurs in the file, so it need not be parsed."""
    if not settings.prefilter:
        return True
    codes = settings.enabled_codes(filename)
    tokens = prefilter_for(codes)
    if tokens is None:
        return True
    if isinstance(data, str):
        some_trigger = any(token.decode("ascii") in data for token in tokens)
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16/32: bytes say nothing about tokens
        return True
    else:
        some_trigger = any(token in data for token in tokens)
    # Most files hold no trigger and end here; the few that do are asked rule by rule.
    return some_trigger and any(_may_fire(rule, data) for rule in metadata_for(codes))
