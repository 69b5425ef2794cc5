"""Which rules run on a file: the enabled codes' rules, the prefilter's trigger substrings, and
the tokens the focused parse keeps."""

from __future__ import annotations

from functools import lru_cache

from amplint.settings import Settings
from amplint.token_search import UNBUILT, screening_groups, token_automaton

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
        codes = _firing_codes(text, codes)
    return codes


class _Presence:
    """Which tokens occur in one text, each searched for at most once.

    A token that is a word read in any case (:func:`any_case`) is searched in the lower-cased
    text, made once when first needed (lower-casing copies the text)."""

    __slots__ = ("data", "known", "_lowered")

    def __init__(self, data: str | bytes) -> None:
        self.data = data
        self.known: dict[str, bool] = {}
        self._lowered: str | bytes | None = None

    def lowered(self) -> str | bytes:
        if self._lowered is None:
            self._lowered = self.data.lower()
        return self._lowered

    def __call__(self, token: str) -> bool:
        known = self.known.get(token)
        if known is None:
            haystack = self.lowered() if any_case(token) else self.data
            needle = token.lower() if any_case(token) else token
            known = self.known[token] = (needle if isinstance(haystack, str) else needle.encode("ascii")) in haystack
        return known


def _may_fire(rule, text: str | bytes, occurs: _Presence | None = None) -> bool:
    """Whether ``text`` holds one of the rule's triggers (if it declares any), all it requires, and
    a match of its required pattern. ``occurs``: what is known of the text's tokens, shared by the
    rules asked about the same text."""
    if occurs is None:
        occurs = _Presence(text)
    if rule.triggers and not any(map(occurs, rule.triggers)) or not all(map(occurs, rule.requires)):
        return False
    return not rule.requires_match or _pattern(rule.requires_match, isinstance(text, str)).search(text) is not None


class _Plan:
    """How the triggers of a set of rules are searched in a file: the prefilter's tokens (each
    searched once), and for each rule the tokens one of which occurs wherever one of its triggers
    does (its *covers*; ``None`` for a rule that declares no trigger)."""

    def __init__(self, codes: frozenset[str]) -> None:
        exact, words = _prefilter_tokens(codes) or _all_tokens(codes)
        self.exact = tuple(t.decode("ascii") for t in exact)
        self.words = tuple(w.decode("ascii") for w in words)
        self.rules: list[tuple[object, frozenset[str] | None]] = []
        for rule in metadata_for(codes):
            if not rule.triggers:
                self.rules.append((rule, None))
                continue
            covers: set[str] = set()
            for trigger in rule.triggers:
                # A trigger contains a kept exact token or, lower-cased, a word (the kept tokens
                # are those that contain no other token): where it occurs, so does that cover.
                lowered = trigger.lower()
                covers.update(t for t in self.exact if not any_case(trigger) and t in trigger)
                covers.update(w for w in self.words if w in lowered)
            self.rules.append((rule, frozenset(covers)))
        self.every_rule_has_triggers = all(covers is not None for _, covers in self.rules)
        # Without ``ahocorasick_rs``, one screening pass over the lower-cased file for the words
        # and the exact tokens alike: their lower-cased forms, less any that holds another,
        # grouped by first character. ``re`` searches an alternation of literals that begin
        # alike about as fast as one ``in`` test (it scans for the shared first character), and
        # most files hold none of them: a group that misses rules out each of its members, and
        # only the members of a group that hits are searched for as they are written.
        self.screen = screening_groups((*self.exact, *self.words))
        self._screens: dict[bool, list] = {}
        # Every token a rule is asked about (triggers and required tokens): with the package,
        # all are answered by the one pass of :meth:`tokens_in`.
        self.tokens = tuple(dict.fromkeys(
            (*self.exact, *self.words, *(t for rule, _ in self.rules for t in (*rule.triggers, *rule.requires)))))
        self._bytes_matcher: tuple | None | object = UNBUILT

    def screens(self, as_text: bool) -> list:
        """:attr:`screen` ready to search a text (``as_text``) or bytes: compiled patterns, encoded
        literals."""
        ready = self._screens.get(as_text)
        if ready is None:
            ready = self._screens[as_text] = [
                (_pattern(screen, as_text) if regex else screen if as_text else screen.encode("ascii"), regex, members)
                for screen, regex, members in self.screen]
        return ready


    def tokens_in(self, data: bytes, lowered: bytes) -> dict[str, bool] | None:
        """Whether each of :attr:`tokens` occurs in ``data`` (a word read in any case, in
        ``lowered``, the lower-cased bytes), their lower-cased forms all found in one pass of an
        Aho-Corasick automaton over ``lowered``: a token whose form is not there is not in the
        file (a word is, where its form is), and only a token whose form is there is searched as
        written. ``None`` without ``ahocorasick_rs``."""
        if self._bytes_matcher is UNBUILT:
            self._bytes_matcher = token_automaton(self.tokens)
        if self._bytes_matcher is None:
            return None
        automaton, form_of = self._bytes_matcher
        seen = {form_of[index] for index, _, _ in automaton.find_matches_as_indexes(lowered, overlapping=True)}
        return {token: token.lower() in seen and (any_case(token) or token.encode("ascii") in data) for token in self.tokens}


def _all_tokens(codes: frozenset[str]) -> tuple[tuple[bytes, ...], tuple[bytes, ...]]:
    """The kept tokens of the rules that declare triggers, when some rule declares none."""
    return _prefilter_tokens(frozenset(rule.code for rule in metadata_for(codes) if rule.triggers)) or ((), ())


@lru_cache(maxsize=64)
def _plan(codes: frozenset[str]) -> _Plan:
    return _Plan(codes)


# The last text asked about, with its codes, the answer and the plan's tokens found in it: the
# engine asks whether a file may have findings and then which rules to run, of the same text
# object. One tuple, replaced whole.
_last_answer: tuple = (None, None, frozenset(), None)


def _firing_codes(text: str | bytes, codes: frozenset[str]) -> frozenset[str]:
    """The codes of ``codes`` whose rules may fire on ``text`` (:func:`_may_fire` of each)."""
    global _last_answer
    last_text, last_codes, last, tokens = _last_answer
    if last_text is text and last_codes == codes and last is not None:
        return last
    plan = _plan(codes)
    occurs = _Presence(text)
    if last_text is text and last_codes == codes:
        # The plan's tokens were found in this text's bytes (same_tokens): only the rules are asked.
        occurs.known.update(tokens)
        found = {token for token, present in tokens.items() if present}
    else:
        found = _screen(plan, text, occurs)
    if not found and plan.every_rule_has_triggers:
        answer: frozenset[str] = frozenset()
    else:
        answer = frozenset(rule.code for rule, covers in plan.rules
                           if (covers is None or not covers.isdisjoint(found)) and _may_fire(rule, text, occurs))
    _last_answer = (text, codes, answer, occurs.known)
    return answer


def _screen(plan: _Plan, text: str | bytes, occurs: _Presence) -> set[str]:
    """The plan's tokens that occur in ``text``, each searched once; most files hold none, and
    then no rule is asked (nor is what was not found written down)."""
    lowered = occurs.lowered()
    if isinstance(text, bytes):
        present = plan.tokens_in(text, lowered)
    else:
        # The tokens are ASCII: each occurs in the text where its bytes occur in the text's UTF-8
        # form (a lone surrogate, from bytes decoded with ``surrogateescape``, kept).
        present = plan.tokens_in(text.encode("utf-8", "surrogatepass"), lowered.encode("utf-8", "surrogatepass"))
    if present is not None:
        found_tokens = {token for token in (*plan.exact, *plan.words) if present[token]}
        if found_tokens:
            occurs.known.update(present)
        return found_tokens
    found: set[str] | None = None
    missed = []
    for needle, is_pattern, members in plan.screens(isinstance(text, str)):
        if needle.search(lowered) is not None if is_pattern else needle in lowered:
            if found is None:
                found = set()
            found.update(t for t in members if occurs(t))
        else:
            missed.append(members)
    if found is None:
        return set()
    for members in missed:
        occurs.known.update(dict.fromkeys(members, False))
    return found


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


def same_answer(data: bytes, text: str) -> None:
    """``text`` is ``data`` decoded and both are ASCII: what was last found for ``data`` holds for
    ``text`` (the engine asks about the text next), so it is not searched again."""
    global _last_answer
    last_data, codes, answer, tokens = _last_answer
    if last_data is data:
        _last_answer = (text, codes, answer, tokens)


def same_tokens(data: bytes, text: str) -> None:
    """``text`` is ``data`` decoded from UTF-8: the prefilter's tokens are ASCII, so each occurs in
    one exactly where it occurs in the other (as do the words read in any case: no character
    outside ASCII lower-cases into theirs), and the text is not searched for them again. The
    rules' own tests (a required pattern) are still made on the text."""
    global _last_answer
    last_data, codes, _, tokens = _last_answer
    if last_data is data and tokens is not None:
        _last_answer = (text, codes, None, {token: present for token, present in tokens.items()
                                            if token in _screened(codes)})


@lru_cache(maxsize=64)
def _screened(codes: frozenset[str]) -> frozenset[str]:
    """The tokens whose answer in the bytes stands for the text (every token the rules are asked
    about: those not found in the screening pass are searched later, in the bytes too), but a
    word read in any case that holds ``i`` or ``k``: ``İ`` and the Kelvin sign lower-case into
    those outside ASCII, and that word is searched in the text again."""
    return frozenset(token for token in _plan(codes).tokens
                     if not (any_case(token) and ("i" in token.lower() or "k" in token.lower())))


def may_have_findings(data: bytes | str, settings: Settings, filename: str) -> bool:
    """False when no enabled rule's trigger occurs in the file, so it need not be parsed."""
    if not settings.prefilter:
        return True
    codes = settings.enabled_codes(filename)
    if prefilter_for(codes) is None:
        return True
    if isinstance(data, bytes) and data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True  # UTF-16/32: bytes say nothing about tokens
    return bool(_firing_codes(data, codes))
