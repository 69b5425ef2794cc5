"""Which files ask the project about other modules, and which of their imports they ask about.

A file that holds a GradScaler asks (AMP006's checkpoint helpers) about an import it calls with
what looks like training state near the opening parenthesis (``save_checkpoint(model, optimizer,
...)``, ``utils.resume(ckpt, ...)``); a file that mentions autocast asks about an import named like
an autocast helper (``from icefall.utils import torch_autocast``: AMP013 needs its dtype); a file
with ``from pkg.mod import *`` asks what that binds (the names it uses and never binds). A model
file's dozens of library imports are not followed, so linting one model file does not read its
library. A file that mentions ``deepspeed`` and a ``.json`` string literal asks about config files
(:func:`asks_about_configs`): ``deepspeed.initialize(config="ds.json")``'s precision is in the file.
"""

from __future__ import annotations

import bisect
import re

TYPE_CHECKING = False  # typing itself is not imported: a clean run does not need it
if TYPE_CHECKING:
    from amplint.project.records import ModuleSummary

ASKING_TOKENS = (b"scaler", b"Scaler")
# A file that opens an autocast through a helper it imports (``with torch_autocast(...)``) asks
# about that import: the helper's summary says which dtype it runs in.
_AUTOCAST = b"autocast"
# A file with ``from pkg.mod import *`` asks what it binds (``torch``, for a file that never imports it).
# (``\bimport`` would be searched for at every position, slowly: the boundary is tested apart.)
_STAR = re.compile(rb"import[ \t]*\*")
# A DeepSpeed config named by a literal path (``config="configs/ds.json"``, ``open("ds.json")``).
_DEEPSPEED = b"deepspeed"
_JSON_LITERAL = re.compile(rb"\.json[\"']")
# In both asking tokens: a file without it, nearly every file of a run, is ruled out in one scan.
_ASKING_CORE = b"caler"
_TRAINING_STATE = re.compile(r"optim|\bopt\b|ckpt|checkpoint|state_dict|scaler", re.IGNORECASE)
_HEAD_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
# A call read from its ``(`` in the reversed text: ``re`` cannot search backwards, and a search
# for a literal ``(`` skips the rest of the text in one scan. Group 1 is the longest dotted chain
# before the ``(`` (spaces may come between, none around a dot: a chain stops where a dot has no
# part before it, ``a..b(`` calls ``b``), group 2 its first part. ``\w`` and ``\s`` match what
# ``str.isalnum()`` or ``_`` and ``str.isspace()`` do, for every code point.
_CALL_BACKWARDS = re.compile(r"\(\s*+((?:\w++\.)*(\w++))")
# How far past a call's opening parenthesis its arguments are looked for.
_ARGUMENT_REACH = 400


def imports_star(data: bytes) -> bool:
    """``data`` holds ``import *`` (``\bimport[ \t]*\*``): a star import, or text spelling one."""
    return any(match.start() == 0 or not _is_word_byte(data[match.start() - 1]) for match in _STAR.finditer(data))


def _is_word_byte(byte: int) -> bool:
    """What ``\w`` matches in a ``bytes`` pattern: an ASCII letter, digit or ``_``."""
    return byte == 95 or 48 <= byte <= 57 or 65 <= byte <= 90 or 97 <= byte <= 122


def may_ask(data: bytes) -> bool:
    return _ASKING_CORE in data and any(token in data for token in ASKING_TOKENS)


def asks_about_configs(data: bytes) -> bool:
    """The file may hand DeepSpeed a config file it names as a literal: it mentions ``deepspeed``
    and a string literal ending in ``.json``. The files are read only when a rule asks
    (:meth:`amplint.project.deferred.DeferredContext.config_precision`)."""
    return _DEEPSPEED in data and _JSON_LITERAL.search(data) is not None


def mentions_scaler(text: str) -> bool:
    """:func:`may_ask` for decoded text."""
    return may_ask(text.encode("utf-8", "surrogatepass"))


def asked_imports(job, data: bytes | None = None) -> ModuleSummary | None:
    """The imports a file asks about (as an import-only summary), or ``None`` when it asks about
    none: it holds no scaler, the prefilter skips it, or no import is called with training state.
    ``data``: the file's bytes, when already read."""
    from amplint.selection import may_have_findings
    from amplint.sourcefile import SourceError, decode_source, read_bytes_or_none

    if data is None:
        data = read_bytes_or_none(job.path)
    if data is None:
        return None
    # The prefilter first: its answer is the one the file's lint asks for next (kept, not searched
    # again), and most files fail it.
    if not may_have_findings(data, job.settings, job.display or job.path):
        return None
    scaler, autocast, star = may_ask(data), _AUTOCAST in data, imports_star(data)
    if not (scaler or autocast or star):
        return None
    try:
        text = decode_source(data, job.path).text
    except SourceError:
        return None
    from amplint.project.records import ModuleSummary
    from amplint.project.imports import STAR_PREFIX, scan_imports

    imports = scan_imports(text, stars=star)
    handed = names_handed_training_state(text, {name.local for name in imports}) if scaler else set()
    if autocast:
        handed |= {name.local for name in imports if names_autocast_helper(name)}
    handed |= {name.local for name in imports if name.local.startswith(STAR_PREFIX)}
    found = tuple(name for name in imports if name.local in handed)
    return ModuleSummary(imports=found) if found else None


def names_autocast_helper(name) -> bool:
    """An import of a project helper named like autocast (``from icefall.utils import
    torch_autocast``): it may open an autocast whose dtype the file cannot see (torch's own
    names are known without the project)."""
    module = name.module.split(".")[0]
    return "autocast" in name.local.lower() and module not in ("torch", "accelerate", "lightning", "pytorch_lightning")


def names_handed_training_state(text: str, names: set[str]) -> set[str]:
    """Those of ``names`` that head a call (``name(...)``, ``name.attr(...)``) with training state
    in reach of its opening parenthesis.

    A call's head is the first name of its dotted chain: in ``trainer.utils.save(...)`` only
    ``trainer`` is a head, and a part that starts with a digit or a non-ASCII letter cannot be
    one. Calls are found from their parentheses, and only the asked names' calls have their
    arguments looked at.
    """
    handed: set[str] = set()
    state: _TrainingState | None = None
    reversed_names = {name[::-1] for name in names}
    for call in _CALL_BACKWARDS.finditer(text[::-1]):
        first = call.group(2)  # the chain's first part, reversed
        if first[-1] in _HEAD_START:
            if first not in reversed_names:
                continue
            head = first[::-1]
        else:
            head = _chain_head(call.group(1)[::-1])
            if head is None or head not in names:
                continue
        if head in handed:
            continue
        state = state or _TrainingState(text)
        arguments = len(text) - call.start()  # just past the ``(`` in ``text``
        if state.within(arguments, arguments + _ARGUMENT_REACH):
            handed.add(head)
    return handed


def _chain_head(chain: str) -> str | None:
    """The first part of a dotted chain that starts with an ASCII letter or ``_``."""
    return next((part for part in chain.split(".") if part[0] in _HEAD_START), None)


class _TrainingState:
    """Answers ``_TRAINING_STATE.search(text, start, end) is not None`` for many windows of one
    text.

    The first windows are read one by one; once they have read as much as the text holds, the
    text is scanned once and every later window looks its words up. Both read the lowered text
    case-sensitively; that finds what the case-insensitive pattern finds unless the text holds
    one of the four characters that match an ASCII letter case-insensitively without lowering to
    it, and then each window is searched with the pattern.
    """

    _FOLDING = "\u0130\u0131\u017f\u212a"  # İ ı ſ K
    # The pattern's words, ``optim`` found as ``opt``. None starts inside another's occurrence (no
    # word's end is another's beginning), so finding each with ``str.find``, far quicker than one
    # alternation searched at every character, finds what ``optim|...|opt`` finds.
    _WORDS = ("opt", "ckpt", "checkpoint", "state_dict", "scaler")
    _WHOLE_WORDS = ("optim", "ckpt", "checkpoint", "state_dict", "scaler")  # all but ``\bopt\b``

    def __init__(self, text: str) -> None:
        self.text = text
        self.exact = not text.isascii() and any(char in text for char in self._FOLDING)
        self.unread = len(text)  # what windows may still read one by one
        self.starts: list[int] | None = None
        self.ends: list[tuple[int, int]] = []  # (any window end at least, a window end exactly; -1: none)

    def within(self, start: int, end: int) -> bool:
        if self.exact:
            return _TRAINING_STATE.search(self.text, start, end) is not None
        end = min(end, len(self.text))
        if self.starts is None:
            if end - start < self.unread:
                self.unread -= max(end - start, 0)
                return self._in_window(start, end)
            self.index()
        index = bisect.bisect_left(self.starts, start)
        while index < len(self.starts) and self.starts[index] < end:
            at_least, exactly = self.ends[index]
            if 0 <= at_least <= end or exactly == end:
                return True
            index += 1
        return False

    def _in_window(self, start: int, end: int) -> bool:
        # Lowering a slice lowers each character as lowering the text does (but a final sigma,
        # never an ASCII letter either way), and to one character: only İ lowers to two.
        window = self.text[start:end].lower()
        if any(word in window for word in self._WHOLE_WORDS):
            return True
        at = window.find("opt")
        while at >= 0:
            before, after = start + at - 1, start + at + 3
            if (before < 0 or not _is_word(self.text[before])) and (after == end or not _is_word(self.text[after])):
                return True
            at = window.find("opt", at + 3)
        return False

    def index(self) -> None:
        """Scans the whole text for the pattern's words, for every later window to look up."""
        text = self.text
        self.starts = []
        lowered = text.lower()  # as long as the text: only İ lowers to two characters
        for start, word in sorted(_occurrences(lowered, self._WORDS)):
            if word == "opt" and lowered.startswith("im", start + 3):
                word = "optim"
            at_least = exactly = -1
            if word != "opt":
                at_least = start + len(word)
            if lowered.startswith("opt", start) and (start == 0 or not _is_word(text[start - 1])):
                after = start + 3  # ``\bopt\b``: a word may go on past the window's end
                if after == len(text) or not _is_word(text[after]):
                    at_least = after
                else:
                    exactly = after
            if at_least >= 0 or exactly >= 0:
                self.starts.append(start)
                self.ends.append((at_least, exactly))


def _occurrences(text: str, words: tuple[str, ...]) -> list[tuple[int, str]]:
    """Where each of ``words`` occurs in ``text``; no word's occurrences can overlap."""
    found = []
    for word in words:
        at = text.find(word)
        while at >= 0:
            found.append((at, word))
            at = text.find(word, at + len(word))
    return found


def _is_word(char: str) -> bool:
    """What ``\\w`` matches in a ``str`` pattern."""
    return char.isalnum() or char == "_"
