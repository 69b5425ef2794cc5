"""How the prefilter's tokens are searched in a file: the Aho-Corasick automaton
(``ahocorasick-rs``) that finds all of them in one pass over a file's bytes, and, without the
package, the screening groups searched apart (the tokens' lower-cased forms, less any that holds
another, by first character), with the same answers (:mod:`amplint.selection`)."""

from __future__ import annotations

import re

# An automaton not built yet (``None`` is one that cannot be: no ``ahocorasick_rs``).
UNBUILT = object()


def token_automaton(tokens: tuple[str, ...]) -> tuple | None:
    """(an automaton of the lower-cased forms of ``tokens``, the form of each pattern by its
    index), or ``None`` when ``ahocorasick_rs`` cannot be imported."""
    try:
        import ahocorasick_rs
    except ImportError:
        return None
    forms = sorted({token.lower() for token in tokens})
    if not forms:
        return None
    return ahocorasick_rs.BytesAhoCorasick([form.encode("ascii") for form in forms]), forms


def screening_groups(tokens: tuple[str, ...]) -> tuple[tuple[str, bool, tuple[str, ...]], ...]:
    """(what to search in the lower-cased text, whether it is a regular expression, the tokens it
    answers for), for each first character of the tokens' lower-cased forms. Where a token occurs
    (in any case, for a word), its lower-cased form and every screening string it holds occur in
    the lower-cased text: a group that finds none of its strings holds none of its members."""
    lowered = {token.lower() for token in tokens}
    screening = sorted(s for s in lowered if not any(other != s and other in s for other in lowered))
    members: dict[str, list[str]] = {s: [] for s in screening}
    for token in tokens:
        members[next(s for s in screening if s in token.lower())].append(token)
    groups: dict[str, list[str]] = {}
    for screen in screening:
        groups.setdefault(screen[0], []).append(screen)
    return tuple(
        (group[0], False, tuple(members[group[0]])) if len(group) == 1
        else ("|".join(map(re.escape, group)), True, tuple(t for s in group for t in members[s]))
        for group in groups.values())
