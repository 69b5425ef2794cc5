"""Parsing a text again after an edit, reusing the statements whose text did not change.

The language server lints a document on every keystroke, and libcst's parse is most of that
lint: about 90 ms for a 1,400-line trainer whose every method the focused parse keeps. An edit
changes one statement. :class:`StatementReuse` cuts the text into its top-level statements, and
a top-level class into its header and members, parses each piece on its own and keeps what it
parsed by the piece's text: the next parse of the document parses only the pieces that changed.

A piece is a statement with the blank and comment lines before it that libcst gives to it
(``leading_lines``); the blank and comment lines indented deeper than the statement that follow
a block belong to that block (its ``footer``) and stay with the piece before. Pieces are cut
where a line begins a statement at the piece's indentation: a line that starts there with a
character other than ``#`` or a closing bracket, is not an ``else``/``elif``/``except``/
``finally`` clause or the definition after a decorator, does not continue a line ending in a
backslash, and is not inside a triple-quoted string as far as counting the quotes tells.

Whether a cut is right is not taken from that reading. A piece starts where the previous one
ended; if it ends inside a string or brackets, libcst refuses it (an unterminated string, an
unclosed bracket, a continuation at the end of its input), and it is parsed again joined with
the next piece. A piece that parses therefore starts and ends where statements of the whole
text do, and holds the statements libcst reads there from the whole text; put together they
are the module ``cst.parse_module`` returns (``tests/test_statement_reuse.py`` compares them
node for node on real code). Where the pieces do not fit this picture the text is parsed whole.

A piece parsed alone must see the document's default indentation and newline, which libcst
reads from the first indented block and the first line ending: a piece after the first one is
parsed after ``if 1:`` and a ``pass`` indented like the document's first block (or after a
``pass`` alone while no block was met), a class member inside ``class _:`` (only where the
members are indented like the document's first block).
"""

from __future__ import annotations

import re

import libcst as cst

from amplint.cst_parse import parse_module
from amplint.focus import physical_lines

_CONTINUES = re.compile(r"(?:else|elif|except|finally)\b")
_NOT_A_START = frozenset(" \t\f\r\n#)]}")
# How many pieces one parse may join before the text is parsed whole.
_MAX_JOINED = 24


class _NoPieces(Exception):
    """The text does not come apart into pieces that parse alone."""


class StatementReuse:
    """Parses texts one after another, reusing what earlier parses made of pieces whose text and
    setting (indentation, newline, place) are unchanged. One parse at a time.

    What a piece parsed to is kept while one of the last ``keep_parses`` parses used it: the
    pieces of the documents being edited stay, the versions of a method typed over are dropped."""

    def __init__(self, keep_parses: int = 16) -> None:
        self.keep_parses = keep_parses
        self._parsed: dict[tuple, cst.Module] = {}
        self._used_in: dict[tuple, int] = {}  # the number of the last parse that used each piece
        self._parses = 0
        self.pieces_parsed = 0  # the pieces the last parse parsed; the others were reused
        self.parsed_whole = False  # the last text did not come apart and was parsed whole

    def parse(self, text: str) -> cst.Module:
        """The module ``cst.parse_module(text)`` returns; raises what it raises."""
        self.pieces_parsed, self.parsed_whole = 0, False
        self._parses += 1
        try:
            return self._assembled(text)
        except (_NoPieces, cst.ParserSyntaxError):
            self.parsed_whole = True
            return parse_module(text)
        finally:
            self._forget_unused()

    def _forget_unused(self) -> None:
        oldest = self._parses - self.keep_parses
        for key in [key for key, used in self._used_in.items() if used <= oldest]:
            del self._parsed[key], self._used_in[key]

    @property
    def kept(self) -> int:
        """How many parsed pieces are kept for the next parses."""
        return len(self._parsed)

    # -- the module

    def _assembled(self, text: str) -> cst.Module:
        lines = physical_lines(text)
        pieces = _pieces(lines, 0, len(lines), "")
        if len(pieces) < 2:
            raise _NoPieces  # one statement: nothing to reuse
        newline = _line_ending(lines[0]) or "\n"
        used: set[int] = set()
        indent: str | None = None  # the document's default indentation, once a block was met
        body: list = []
        header = footer = ()
        trailing_newline = True
        at = 0
        while at < len(pieces):
            first = at == 0
            start, end = pieces[at]
            by_members = None if first else self._class_or_none(lines, start, end, indent, newline, at == len(pieces) - 1, used)
            if by_members is not None:
                statement, indent, ending = by_members
                body.append(statement)
                if at == len(pieces) - 1:
                    footer, trailing_newline = ending
                at += 1
                continue
            prefix = "" if first else (f"if 1:{newline}{indent}pass{newline}" if indent is not None else f"pass{newline}")
            module, at = self._joined(lines, pieces, at, prefix, "module", _fits_module(prefix), used)
            statements = module.body[1:] if prefix else module.body
            if first:
                header = module.header
            if at == len(pieces):
                footer, trailing_newline = module.footer, module.has_trailing_newline
            if indent is None and any(map(_has_block, statements)):
                indent = module.default_indent
            body.extend(statements)
        return cst.Module(body=tuple(body), header=header, footer=footer, encoding="utf-8",
                          default_indent=indent if indent is not None else "    ", default_newline=newline,
                          has_trailing_newline=trailing_newline)

    def _joined(self, lines: list[str], pieces: list[tuple[int, int]], at: int, prefix: str, kind,
                fits, used: set[int]) -> tuple[cst.Module, int]:
        """``prefix`` and the pieces from ``at`` parsed, as few as parse (a piece ending inside a
        string is joined with the next), and ``fits(module, final)``; the index of the piece
        after them. ``kind`` tells apart what ``prefix`` and the text do not."""
        start = pieces[at][0]
        for joined in range(at, min(len(pieces), at + _MAX_JOINED)):
            final = joined == len(pieces) - 1
            piece = "".join(lines[start:pieces[joined][1]])
            key = (kind, prefix, piece, final)
            module = self._reused(key, used)
            if module is not None:
                return module, joined + 1
            try:
                module = parse_module(prefix + piece)
            except cst.ParserSyntaxError:
                if final:
                    raise
                continue
            self.pieces_parsed += 1
            if not fits(module, final):
                raise _NoPieces
            self._keep(key, module, used)
            return module, joined + 1
        raise _NoPieces

    # -- a class, member by member

    def _class_or_none(self, lines: list[str], start: int, end: int, indent: str | None, newline: str, last: bool,
                       used: set[int]):
        """``(class, the document's default indentation, (module footer, trailing newline))``: a
        top-level class put together from its header and its members, each parsed (or reused)
        alone; ``None`` where the piece is no class with members on lines of their own indented
        like the document's first block (``indent``; while unknown, the class's body is that
        block), or does not come apart (a header over several lines read as a member)."""
        found = _members_start(lines, start, end)
        if found is None:
            return None
        members_at, member_indent = found
        if indent is not None and member_indent != indent:
            return None
        members = _pieces(lines, members_at, end, member_indent)
        if len(members) < 2:
            return None
        try:
            return self._class_by_members(lines, start, members, member_indent, newline, last, used)
        except (_NoPieces, cst.ParserSyntaxError):
            return None

    def _class_by_members(self, lines: list[str], start: int, members: list[tuple[int, int]], member_indent: str,
                          newline: str, last: bool, used: set[int]):
        block = f"if 1:{newline}{member_indent}pass{newline}"
        shell_text = "".join(lines[start:members[0][0]]) + f"{member_indent}pass{newline}"
        key = ("module", block, shell_text, False)
        shell = self._reused(key, used)
        if shell is None:
            shell = parse_module(block + shell_text)
            self.pieces_parsed += 1
            classdef = shell.body[-1] if len(shell.body) == 2 else None
            if not isinstance(classdef, cst.ClassDef) or not isinstance(classdef.body, cst.IndentedBlock) \
                    or classdef.body.indent is not None or len(classdef.body.body) != 1 or classdef.body.footer \
                    or shell.footer or shell.body[0].body.footer:
                raise _NoPieces
            self._keep(key, shell, used)
        classdef = shell.body[-1]
        statements: list = []
        at = 0
        while at < len(members):
            module, at = self._joined(lines, members, at, f"class _:{newline}", ("member", last), _fits_member(last), used)
            wrapper = module.body[0]
            statements.extend(wrapper.body.body)
        block_footer, ending = wrapper.body.footer, (module.footer, module.has_trailing_newline)
        classdef = classdef.with_changes(body=classdef.body.with_changes(body=tuple(statements), footer=block_footer))
        return classdef, member_indent, ending

    # -- what was parsed before

    def _reused(self, key: tuple, used: set[int]) -> cst.Module | None:
        """What ``key`` parsed to before, unless this parse already used it: a node appears once
        in a module (facts and positions know nodes by identity), so the second of two equal
        pieces is parsed again."""
        found = self._parsed.get(key)
        if found is None or id(found) in used:
            return None
        used.add(id(found))
        self._used_in[key] = self._parses
        return found

    def _keep(self, key: tuple, parsed: cst.Module, used: set[int]) -> None:
        used.add(id(parsed))
        if key in self._parsed:
            return  # the first of two equal pieces stays the one reused
        self._parsed[key] = parsed
        self._used_in[key] = self._parses


def _fits_module(prefix: str):
    """Whether a piece parsed after ``prefix`` is statements of the document: one or more after
    the prefix's, nothing left over unless it ends the document, nothing taken into the prefix's
    block."""
    def fits(module: cst.Module, final: bool) -> bool:
        if len(module.body) < (2 if prefix else 1) or not final and (module.footer or not module.has_trailing_newline):
            return False
        return not (prefix.startswith("if") and module.body[0].body.footer)
    return fits


def _fits_member(last: bool):
    """Whether members parsed inside ``class _:`` are members of the class: the block indented by
    the document's indentation, a footer only after the class's last member, nothing left over
    unless the class ends the document (``last``)."""
    def fits(module: cst.Module, final: bool) -> bool:
        wrapper = module.body[0] if len(module.body) == 1 else None
        if not isinstance(wrapper, cst.ClassDef) or not isinstance(wrapper.body, cst.IndentedBlock):
            return False
        if wrapper.body.indent is not None or not final and wrapper.body.footer:
            return False
        return final and last or not module.footer and module.has_trailing_newline
    return fits


def _line_ending(line: str) -> str:
    if line.endswith("\r\n"):
        return "\r\n"
    return line[-1] if line.endswith(("\n", "\r")) else ""


def _is_blank_or_comment(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _indentation(line: str) -> int:
    return len(line) - len(line.lstrip(" \t\f"))


def _continued(line: str) -> bool:
    """``line`` ends with a backslash: the next line continues it."""
    return line.rstrip("\r\n").endswith("\\")


def _starts_statement(line: str, indent: str) -> bool:
    """``line`` begins at exactly ``indent`` with what may begin a statement of that level."""
    if not line.startswith(indent) or len(line) == len(indent) or line[len(indent)] in _NOT_A_START:
        return False
    return not _CONTINUES.match(line, len(indent))


def _open_string_after(line: str, open_quote: str | None) -> str | None:
    """Which triple quote is open after ``line``, counting them (a guess: quotes in comments or
    single-quoted strings count too; a wrong guess only moves a cut, which the parse checks)."""
    if '"""' not in line and "'''" not in line:
        return open_quote
    at = 0
    while True:
        if open_quote is not None:
            found = line.find(open_quote, at)
            if found < 0:
                return open_quote
            open_quote, at = None, found + 3
            continue
        double, single = line.find('"""', at), line.find("'''", at)
        if double < 0 and single < 0:
            return None
        if single < 0 or 0 <= double < single:
            open_quote, at = '"""', double + 3
        else:
            open_quote, at = "'''", single + 3


def _pieces(lines: list[str], low: int, high: int, indent: str) -> list[tuple[int, int]]:
    """(first line, end) of each statement of ``lines[low:high]`` at ``indent``: the first one
    from ``low``, each other one with the blank and comment lines before it that are not the
    previous block's."""
    starts = []
    in_decorators = False
    open_quote = None
    for number in range(low, high):
        line = lines[number]
        if open_quote is None and _starts_statement(line, indent) and not (number > low and _continued(lines[number - 1])):
            decorator = line[len(indent)] == "@"
            if not in_decorators:
                starts.append(number)
            # Another decorator, or the definition the decorators belong to: the same statement.
            in_decorators = decorator
        open_quote = _open_string_after(line, open_quote)
    if not starts:
        return []
    bounds = [low]
    for index in range(1, len(starts)):
        number = starts[index]
        begin = number
        while begin > starts[index - 1] + 1 and _is_blank_or_comment(lines[begin - 1]):
            begin -= 1
        # The comment and blank lines indented deeper than this level after a block are its
        # footer: they, and the lines before the last of them, stay with the previous statement.
        for inner in range(number - 1, begin - 1, -1):
            if _indentation(lines[inner]) > len(indent):
                begin = inner + 1
                break
        bounds.append(begin)
    return [(begin, bounds[index + 1] if index + 1 < len(bounds) else high) for index, begin in enumerate(bounds)]


def _members_start(lines: list[str], start: int, end: int) -> tuple[int, str] | None:
    """(where the members begin, their indentation) when ``lines[start:end]`` is a top-level class
    (after its decorators) whose body is on lines of its own: the header is every line up to the
    last one that is not blank or a comment before the first indented line that may begin a
    statement. A line inside the header's brackets can be taken for a member: the header then
    does not parse."""
    number = start
    while number < end and (_is_blank_or_comment(lines[number]) or lines[number].startswith("@")):
        number += 1
    if number >= end or not lines[number].startswith(("class ", "class\t")):
        return None
    for candidate in range(number + 1, end):
        line = lines[candidate]
        if _is_blank_or_comment(line) or _continued(lines[candidate - 1]):
            continue
        member_indent = line[:_indentation(line)]
        if not member_indent or not _starts_statement(line, member_indent):
            return None
        header_end = candidate
        while header_end > number + 1 and _is_blank_or_comment(lines[header_end - 1]):
            header_end -= 1
        return header_end, member_indent
    return None


def _has_block(node) -> bool:
    """Whether ``node`` (a statement or a clause of one) holds an indented block: the first one of
    a document sets libcst's default indentation, and a piece without one has no node that
    depends on it."""
    if isinstance(node, cst.Match):
        return True
    if isinstance(getattr(node, "body", None), cst.IndentedBlock):
        return True
    clauses = (getattr(node, "orelse", None), getattr(node, "finalbody", None), *getattr(node, "handlers", ()))
    return any(clause is not None and _has_block(clause) for clause in clauses)
