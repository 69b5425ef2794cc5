"""Which rules run on a file: the enabled codes' rules, the prefilter's trigger substrings, and
the tokens the focused parse keeps."""

from __future__ import annotations

from functools import lru_cache

from amplint.settings import Settings

# Words the facts and the noqa reader read whatever their case: a ``step`` on a receiver named
# like a scaler (``GRAD_SCALER.step(opt)``), a ``with`` item named like autocast
# (``with self.AutoCast():``), a ``# NoQA: AMP001`` comment. A trigger or required token that is
# one of these words, in any spelling, occurs wherever the word occurs in any case.
ANY_CASE_WORDS = frozenset({"scaler", "autocast", "noqa"})


def any_case(token: str) -> bool:
    return token.lower() in ANY_CASE_WORDS


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
        lowered: list = []
        codes = frozenset(rule.code for rule in metadata_for(codes) if _may_fire(rule, text, lowered))
    return codes


def _may_fire(rule, text: str | bytes, lowered: list | None = None) -> bool:
    """Whether ``text`` holds one of the rule's triggers (if it declares any), all it requires, and
    a match of its required pattern. ``lowered``: where the lower-cased text is kept for the next
    rule asked about the same text (lower-casing copies it)."""
    as_text = isinstance(text, str)
    if lowered is None:
        lowered = []

    def occurs(token: str) -> bool:
        if any_case(token):
            if not lowered:
                lowered.append(text.lower())
            haystack, token = lowered[0], token.lower()
        else:
            haystack = text
        return (token if as_text else token.encode("ascii")) in haystack

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
    """The enabled rules' declared trigger substrings searched as written; ``None`` disables
    prefiltering. Triggers that are words read in any case are :func:`any_case_prefilter_for`'s.

    Plain substring tests (``in``, a memory search in C) are several times faster
    than one alternation regex over the same tokens, and run on raw bytes so that
    skipped files are never decoded.
    """
    exact, _ = _prefilter_tokens(codes) or (None, None)
    return exact


@lru_cache(maxsize=64)
def any_case_prefilter_for(codes: frozenset[str]) -> tuple[bytes, ...]:
    """The enabled rules' triggers that are words read in any case, lower-cased: searched in the
    lower-cased file."""
    tokens = _prefilter_tokens(codes)
    return tokens[1] if tokens is not None else ()


@lru_cache(maxsize=64)
def _prefilter_tokens(codes: frozenset[str]) -> tuple[tuple[bytes, ...], tuple[bytes, ...]] | None:
    exact: set[bytes] = set()
    words: set[bytes] = set()
    for rule in metadata_for(codes):
        if not rule.triggers:
            return None  # a rule that declares no trigger must see every file
        for trigger in rule.triggers:
            (words.add(trigger.lower().encode("ascii")) if any_case(trigger) else exact.add(trigger.encode("ascii")))
    # A trigger that contains another (``GradScaler``, ``Scaler``) adds nothing to "some
    # trigger occurs", and every file that fails the prefilter is searched for each trigger.
    kept = tuple(sorted(t for t in exact if not any(other != t and other in t for other in exact)
                        and not any(word in t.lower() for word in words)))
    return kept, tuple(sorted(words))


@lru_cache(maxsize=64)
def focus_tokens_for(codes: frozenset[str]) -> tuple[str, ...] | None:
    """The tokens a definition needs for the focused parse to keep it; those that are words read
    in any case (:data:`ANY_CASE_WORDS`) are kept in any case."""
    triggers = prefilter_for(codes)
    if triggers is None:
        return None
    words = any_case_prefilter_for(codes)
    extra = {token for rule in metadata_for(codes) for token in (*rule.focus_tokens, *rule.requires)}
    return tuple(sorted({t.decode("ascii") for t in (*triggers, *words)} | extra))


def may_have_findings(data: bytes | str, settings: Settings, filename: str) -> bool:
    """False when no enabled rule's trigger occurs in the file, so it need not be parsed."""
    if not settings.prefilter:
        return True
    codes = settings.enabled_codes(filename)
    tokens = prefilter_for(codes)
    if tokens is None:
        return True
    words = any_case_prefilter_for(codes)
    if isinstance(data, str):
        some_trigger = (any(token.decode("ascii") in data for token in tokens)
                        or bool(words) and _any_in(tuple(w.decode("ascii") for w in words), data.lower()))
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16/32: bytes say nothing about tokens
        return True
    else:
        # Lower-casing copies the file: done only for a file with no trigger as written, once.
        some_trigger = any(token in data for token in tokens) or bool(words) and _any_in(words, data.lower())
    # Most files hold no trigger and end here; the few that do are asked rule by rule.
    if not some_trigger:
        return False
    lowered: list = []
    return any(_may_fire(rule, data, lowered) for rule in metadata_for(codes))


def _any_in(tokens: tuple, data: bytes | str) -> bool:
    return any(token in data for token in tokens)
