"""The imports of a module, for the project pass: from its parsed tree, or from its text alone.

``scan_imports`` finds the module-level import statements of a text (and those in a top-level
``try``/``if``) without parsing the whole module: only the import statements are parsed.
"""

from __future__ import annotations

import ast
import bisect
import re
import textwrap

from amplint.project.quiet_parse import parse
from amplint.project.records import ImportedName
from amplint.sourcefile import LINE_BREAK


# Matched at a line's start (after any of Python's line breaks: a lone ``\r`` too).
_IMPORT_START = re.compile(r"([ \t]*)(?:from[ \t]+[\w.]+[ \t]+import\b|import[ \t]+\w)")
# A line break followed by a line that starts with neither a space nor ``#``.
_TOP_LEVEL_LINE = re.compile(r"[\r\n](?=[^\s#])")
_BLOCK_OPENERS = ("try", "except", "else", "if ", "elif ", "finally")


def scan_imports(text: str, stars: bool = False) -> tuple[ImportedName, ...]:
    """The module-level imports of ``text`` (and those in a top-level ``try``/``if``), found
    without parsing the whole module: only the import statements themselves are parsed.

    Only the lines that hold ``import`` are looked at: a file's text is not split into lines.
    """
    chunks: list[str] = []
    top_level: list[int] | None = None
    tried = -1
    at = text.find("import")
    while at >= 0:
        # The start of the line that holds this ``import`` (every statement found holds one).
        start = max(text.rfind("\n", 0, at), text.rfind("\r", 0, at)) + 1
        at = text.find("import", at + 6)
        if start == tried:
            continue
        tried = start
        match = _IMPORT_START.match(text, start)
        if match is None:
            continue
        if match.group(1):
            if top_level is None:
                top_level = _top_level_line_starts(text)
            if not _in_top_level_block(text, top_level, start):
                continue
        chunk, following = _line_at(text, start)
        while following >= 0 and (chunk.count("(") > chunk.count(")") or chunk.rstrip().endswith("\\")):
            line, following = _line_at(text, following)
            chunk += "\n" + line
        chunks.append(textwrap.dedent(chunk))
    # Parsed together, in one call, unless one of them does not parse alone.
    together = parse("\n".join(chunks)) if chunks else None
    if together is not None:
        statements = together.body
    else:
        statements = [statement for chunk in chunks if (tree := parse(chunk)) is not None for statement in tree.body]
    return tuple(imports_of(ast.Module(body=statements, type_ignores=[]), stars))


def _line_at(text: str, start: int) -> tuple[str, int]:
    """The physical line that begins at ``start``, and where the next one begins (-1: none)."""
    line_break = LINE_BREAK.search(text, start)
    if line_break is None:
        return text[start:], -1
    return text[start:line_break.start()], line_break.end()


def _top_level_line_starts(text: str) -> list[int]:
    """Where the lines that start with neither a space nor ``#`` begin (a line break is a space,
    so the ``\\n`` of a ``\\r\\n`` begins none)."""
    starts = [match.end() for match in _TOP_LEVEL_LINE.finditer(text)]
    if text and not text[0].isspace() and text[0] != "#":
        starts.insert(0, 0)
    return starts


def _in_top_level_block(text: str, top_level: list[int], start: int) -> bool:
    """The indented line at ``start`` is in a ``try``/``if`` block of the module itself, not in a def or class."""
    index = bisect.bisect_left(top_level, start) - 1
    return index >= 0 and text.startswith(_BLOCK_OPENERS, top_level[index])


STAR_PREFIX = "*"  # the local name of ``from pkg.mod import *`` is ``*pkg.mod``: it binds no one name


def imports_of(tree: ast.Module, stars: bool = False) -> list[ImportedName]:
    """Module-level imports (and those inside a top-level ``try``/``if``); with ``stars``, also
    ``from pkg.mod import *``, as a whole-module import named ``*pkg.mod``."""
    out: list[ImportedName] = []
    statements = list(tree.body)
    while statements:
        statement = statements.pop(0)
        if isinstance(statement, (ast.Try, ast.If)):
            statements.extend(statement.body)
            statements.extend(getattr(statement, "orelse", []))
            for handler in getattr(statement, "handlers", []):
                statements.extend(handler.body)
        elif isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.asname:
                    out.append(ImportedName(alias.asname, alias.name, 0))
                else:
                    head = alias.name.split(".")[0]
                    out.append(ImportedName(head, head, 0))
        elif isinstance(statement, ast.ImportFrom):
            for alias in statement.names:
                if alias.name != "*":
                    out.append(ImportedName(alias.asname or alias.name, statement.module or "", statement.level, alias.name))
                elif stars:
                    module = statement.module or ""
                    out.append(ImportedName(f"{STAR_PREFIX}{'.' * statement.level}{module}", module, statement.level))
    return out
