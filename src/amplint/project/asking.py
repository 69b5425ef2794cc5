"""Which files ask the project about other modules, and which of their imports they ask about.

Only a file that holds a GradScaler asks (AMP006's checkpoint helpers), and only about an import
it calls with what looks like training state near the opening parenthesis
(``save_checkpoint(model, optimizer, ...)``, ``utils.resume(ckpt, ...)``): a model file's dozens
of library imports are not followed, so linting one model file does not read its library.
"""

from __future__ import annotations

import bisect
import os
import re
import stat
TYPE_CHECKING = False  # typing itself is not imported: a clean run does not need it
if TYPE_CHECKING:
    from amplint.project.records import ModuleSummary

ASKING_TOKENS = (b"scaler", b"Scaler")
# In both asking tokens: a file without it, nearly every file of a run, is ruled out in one scan.
_ASKING_CORE = b"caler"
_TRAINING_STATE = re.compile(r"optim|\bopt\b|ckpt|checkpoint|state_dict|scaler", re.IGNORECASE)
_HEAD_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
# How far past a call's opening parenthesis its arguments are looked for.
_ARGUMENT_REACH = 400


def may_ask(data: bytes) -> bool:
    return _ASKING_CORE in data and any(token in data for token in ASKING_TOKENS)


def mentions_scaler(text: str) -> bool:
    """:func:`may_ask` for decoded text."""
    return may_ask(text.encode("utf-8", "surrogatepass"))


def asked_imports(job, data: bytes | None = None) -> ModuleSummary | None:
    """The imports a file asks about (as an import-only summary), or ``None`` when it asks about
    none: it holds no scaler, the prefilter skips it, or no import is called with training state.
    ``data``: the file's bytes, when already read."""
    from amplint.selection import may_have_findings
    from amplint.sourcefile import SourceError, decode_source

    if data is None:
        data = _read_regular_file(job.path)
    if data is None or not may_ask(data) or not may_have_findings(data, job.settings, job.display or job.path):
        return None
    try:
        text = decode_source(data, job.path).text
    except SourceError:
        return None
    from amplint.project.records import ModuleSummary
    from amplint.project.imports import scan_imports

    imports = scan_imports(text)
    handed = names_handed_training_state(text, {name.local for name in imports})
    found = tuple(name for name in imports if name.local in handed)
    return ModuleSummary(imports=found) if found else None


def _read_regular_file(path: str) -> bytes | None:
    """What ``sourcefile.read_bytes`` reads, or ``None`` where it raises; read once for every
    file of a run, so without its ``Path`` objects and messages."""
    from amplint.sourcefile import MAX_FILE_BYTES

    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def names_handed_training_state(text: str, names: set[str]) -> set[str]:
    """Those of ``names`` that head a call (``name(...)``, ``name.attr(...)``) with training state
    in reach of its opening parenthesis.

    A call's head is the first name of its dotted chain: in ``trainer.utils.save(...)`` only
    ``trainer`` is a head. Calls are found from their parentheses, and only the asked names'
    calls have their arguments looked at.
    """
    handed: set[str] = set()
    state: _TrainingState | None = None
    paren = text.find("(")
    while paren >= 0:
        head = _call_head(text, paren)
        if head is not None and head in names and head not in handed:
            state = state or _TrainingState(text)
            if state.within(paren + 1, paren + 1 + _ARGUMENT_REACH):
                handed.add(head)
        paren = text.find("(", paren + 1)
    return handed


def _call_head(text: str, paren: int) -> str | None:
    """The head of the dotted chain that ``(`` at ``paren`` calls (spaces may come between):
    its first part that starts with an ASCII letter or ``_``; a part that starts with a digit or
    another letter cannot be one."""
    end = paren
    while end > 0 and text[end - 1].isspace():
        end -= 1
    head = None
    while True:
        begin = end
        while begin > 0 and _is_word(text[begin - 1]):
            begin -= 1
        if begin == end:
            return head  # ``(`` after an operator, or a ``.`` with no part before it
        if text[begin] in _HEAD_START:
            head = text[begin:end]
        if begin == 0 or text[begin - 1] != ".":
            return head
        end = begin - 1


class _TrainingState:
    """Answers ``_TRAINING_STATE.search(text, start, end) is not None`` for many windows of one
    text from one scan of it.

    The scan is case-sensitive over the lowered text; that finds what the case-insensitive
    pattern finds unless the text holds one of the four characters that match an ASCII letter
    case-insensitively without lowering to it, and then each window is searched.
    """

    _FOLDING = "\u0130\u0131\u017f\u212a"  # İ ı ſ K
    _WORDS = re.compile(r"optim|ckpt|checkpoint|state_dict|scaler|opt")  # no word starts inside another

    def __init__(self, text: str) -> None:
        self.text = text
        self.exact = not text.isascii() and any(char in text for char in self._FOLDING)
        self.starts: list[int] = []
        self.ends: list[tuple[int, int]] = []  # (any window end at least, a window end exactly; -1: none)
        if self.exact:
            return
        lowered = text.lower()  # as long as the text: only İ lowers to two characters
        for match in self._WORDS.finditer(lowered):
            start = match.start()
            word = match.group()
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

    def within(self, start: int, end: int) -> bool:
        if self.exact:
            return _TRAINING_STATE.search(self.text, start, end) is not None
        end = min(end, len(self.text))
        index = bisect.bisect_left(self.starts, start)
        while index < len(self.starts) and self.starts[index] < end:
            at_least, exactly = self.ends[index]
            if 0 <= at_least <= end or exactly == end:
                return True
            index += 1
        return False


def _is_word(char: str) -> bool:
    """What ``\\w`` matches in a ``str`` pattern."""
    return char.isalnum() or char == "_"
