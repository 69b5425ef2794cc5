"""``.gitignore`` semantics: patterns as git's wildmatch reads them, and the ignore files of a tree."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path


class PatternError(ValueError):
    """An exclude pattern that cannot mean what it says (git would silently never match it)."""


# Patterns and paths are matched as bytes, as git does: ``?`` is one byte, not one character.
# Each byte is carried as the code point of the same value (latin-1), so ``re`` can match it.
def _as_bytes_text(text: str) -> str:
    return text.encode("utf-8", "surrogateescape").decode("latin-1")


_POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "\\x21-\\x7e",
    "lower": "a-z",
    "print": "\\x20-\\x7e",
    "punct": "".join(re.escape(chr(c)) for c in range(0x21, 0x7F) if not chr(c).isalnum()),
    "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
}

_NEVER = "(?!)"


def _translate_class(glob: str, start: int, strict: bool) -> tuple[str, int]:
    """Regex for the bracket expression at ``glob[start] == "["`` and the index after it.

    As git's wildmatch: ``!`` or ``^`` negates, a leading ``]`` is literal, a backslash
    escapes, ``[:digit:]``-style classes; a reversed range (``z-a``) matches only its first
    character and an unclosed ``[`` makes the pattern match nothing. ``strict`` raises instead.
    """
    n = len(glob)
    j = start + 1
    negated = j < n and glob[j] in "!^"
    j += negated
    items: list[str] = []
    first = True
    while j < n and (glob[j] != "]" or first):
        first = False
        if glob.startswith("[:", j) and ":]" in glob[j + 2:]:
            close = glob.index(":]", j + 2)
            name = glob[j + 2: close]
            if name not in _POSIX_CLASSES:
                if strict:
                    raise PatternError(f"unknown character class [:{name}:]")
                return _NEVER, n
            items.append(_POSIX_CLASSES[name])
            j = close + 2
            continue
        low, j = _class_char(glob, j)
        if j + 1 < n and glob[j] == "-" and glob[j + 1] != "]":
            high, j = _class_char(glob, j + 1)
            if high < low:
                if strict:
                    raise PatternError(f"bad character range {low}-{high}")
                items.append(re.escape(low))  # git compares the first end alone before the range
                continue
            items.append(f"{re.escape(low)}-{re.escape(high)}")
        else:
            items.append(re.escape(low))
    if j >= n:
        if strict:
            raise PatternError("unclosed '[' (write '\\[' for a literal bracket)")
        return _NEVER, n
    body = "".join(items)
    if negated:
        return f"[^/{body}]", j + 1
    return (f"(?!/)[{body}]" if body else _NEVER), j + 1


def _class_char(glob: str, j: int) -> tuple[str, int]:
    if glob[j] == "\\" and j + 1 < len(glob):
        return glob[j + 1], j + 2
    return glob[j], j + 1


def _translate(glob: str, strict: bool = False) -> str:
    """Regex for one gitignore glob (no leading ``/`` or ``!``) matched against a relative path."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "*":
            if glob.startswith("**", i):
                before_ok = i == 0 or glob[i - 1] == "/"
                after = glob[i + 2: i + 3]
                if before_ok and after == "/":
                    out.append("(?:[^/]*/)*")  # "**/": zero or more directories
                    i += 3
                    continue
                if before_ok and i + 2 == n:
                    out.append(".*")  # trailing "/**": everything inside
                    i += 2
                    continue
                out.append("[^/]*")
                i += 2
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            regex, i = _translate_class(glob, i, strict)
            out.append(regex)
            continue
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class Pattern:
    """One line of an ignore file, compiled: ``negated`` for ``!pattern``, ``dir_only`` for ``pattern/``."""

    regex: re.Pattern[str]
    negated: bool
    dir_only: bool
    source: str


def parse_pattern(line: str, strict: bool = False) -> Pattern | None:
    """One ``.gitignore`` line, or ``None`` for blanks and comments.

    Odd lines match what git matches (``[z-a]`` only "z", an unclosed ``[`` nothing); with
    ``strict`` (configured and command-line excludes) they raise PatternError instead.
    """
    line = _as_bytes_text(line.rstrip("\n").rstrip("\r"))
    if not line or line.startswith("#"):
        return None
    # Trailing spaces are ignored unless escaped with a backslash.
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        stripped += " "
    line = stripped
    if not line:
        return None
    negated = False
    if line.startswith("!"):
        negated, line = True, line[1:]
    elif line.startswith("\\!") or line.startswith("\\#"):
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.lstrip("/")
    body = _translate(line, strict)
    regex = body if anchored else f"(?:.*/)?{body}"
    return Pattern(re.compile(f"^{regex}$", re.DOTALL), negated, dir_only, line)


def check_pattern(pattern: str) -> None:
    """Raise PatternError naming the problem if ``pattern`` cannot work as an exclude."""
    try:
        parse_pattern(pattern, strict=True)
    except PatternError as exc:
        raise PatternError(f"invalid pattern {pattern!r}: {exc}") from None


@dataclass
class IgnoreFile:
    """Patterns that apply below ``base`` (the directory holding the ``.gitignore``)."""

    base: Path
    patterns: list[Pattern] = field(default_factory=list)

    @classmethod
    def from_lines(cls, base: Path, lines: Iterable[str]) -> "IgnoreFile":
        patterns = [p for p in (parse_pattern(line) for line in lines) if p is not None]
        return cls(base, patterns)

    def match(self, rel: str, is_dir: bool) -> bool | None:
        """True ignored, False re-included (``!``), None no opinion; ``rel`` is posix, relative to base."""
        rel = _as_bytes_text(rel)
        either = self._either()
        if either is not None:  # no ``!`` pattern: any match ignores
            return True if either[is_dir].match(rel) else None
        for pattern in reversed(self.patterns):
            if pattern.dir_only and not is_dir:
                continue
            if pattern.regex.match(rel):
                return not pattern.negated
        return None


    def _either(self):
        """Without a ``!`` pattern, which line matches does not matter: one regex for files and one
        for directories (every pattern) answer at once, instead of a loop over the patterns
        (the default excludes are asked about every file of a run)."""
        known = getattr(self, "_either_of", None)
        # Keyed by the list and its length: nothing edits an ignore file's patterns once read,
        # but a test or a caller that did would not be answered from stale regexes.
        if known is None or known[0] is not self.patterns or known[1] != len(self.patterns):
            combined = None
            if not any(pattern.negated for pattern in self.patterns):
                combined = (_alternation(p for p in self.patterns if not p.dir_only), _alternation(self.patterns))
            known = self._either_of = (self.patterns, len(self.patterns), combined)
        return known[2]


def _alternation(patterns: Iterable[Pattern]) -> re.Pattern:
    sources = [pattern.regex.pattern for pattern in patterns]
    return re.compile("|".join(f"(?:{source})" for source in sources) if sources else _NEVER, re.DOTALL)


@lru_cache(maxsize=4096)
def _read_ignore_file(path: str) -> tuple[str, ...] | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    if data.startswith(b"\xef\xbb\xbf"):  # git skips a UTF-8 BOM
        data = data[3:]
    # Lines end at "\n" only (a form feed is part of a pattern), as in git.
    return tuple(data.decode("utf-8", "surrogateescape").split("\n"))


def _ignore_file_at(directory: Path, name: str = ".gitignore") -> IgnoreFile | None:
    lines = _read_ignore_file(str(directory / name))
    if not lines:
        return None
    ignore = IgnoreFile.from_lines(directory, lines)
    return ignore if ignore.patterns else None


def find_git_root(start: Path) -> Path | None:
    here = start if start.is_dir() else start.parent
    for directory in (here, *here.parents):
        if (directory / ".git").exists():
            return directory
    return None


def _is_ignored(stack: Sequence[IgnoreFile], path: Path, is_dir: bool) -> bool:
    """Deeper ``.gitignore`` files override shallower ones; the last matching line wins in each."""
    for ignore in reversed(stack):
        try:
            rel = path.relative_to(ignore.base).as_posix()
        except ValueError:
            continue
        verdict = ignore.match(rel, is_dir)
        if verdict is not None:
            return verdict
    return False


