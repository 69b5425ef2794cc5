"""The imports of a module, for the project pass: from its parsed tree, or from its text alone.

``scan_imports`` finds the module-level import statements of a text (and those in a top-level
``try``/``if``) without parsing the whole module: only the import statements are parsed.
"""

from __future__ import annotations

import ast
import bisect
import re
import textwrap

from amplint.project.records import ImportedName
from amplint.sourcefile import LINE_BREAK, source_lines


_IMPORT_START = re.compile(r"^([ \t]*)(?:from[ \t]+[\w.]+[ \t]+import\b|import[ \t]+\w)", re.MULTILINE)
_BLOCK_OPENERS = ("try", "except", "else", "if ", "elif ", "finally")


def scan_imports(text: str) -> tuple[ImportedName, ...]:
    """The module-level imports of ``text`` (and those in a top-level ``try``/``if``), found
    without parsing the whole module: only the import statements themselves are parsed."""
    from amplint.project.summarize import parse  # which imports this module

    statements: list[ast.stmt] = []
    lines = source_lines(text)
    # Where each line starts: a line break is one or two characters (``\r\n``).
    offsets = [0] + [match.end() for match in LINE_BREAK.finditer(text)]
    for match in _IMPORT_START.finditer(text):
        row = bisect.bisect_right(offsets, match.start()) - 1
        if match.group(1) and not _in_top_level_block(lines, row):
            continue
        end = row
        chunk = lines[row]
        while end + 1 < len(lines) and (chunk.count("(") > chunk.count(")") or chunk.rstrip().endswith("\\")):
            end += 1
            chunk += "\n" + lines[end]
        tree = parse(textwrap.dedent(chunk))
        if tree is not None:
            statements.extend(tree.body)
    return tuple(imports_of(ast.Module(body=statements, type_ignores=[])))


def _in_top_level_block(lines: list[str], row: int) -> bool:
    """The indented line ``row`` is in a ``try``/``if`` block of the module itself, not in a def or class."""
    for previous in range(row - 1, -1, -1):
        line = lines[previous]
        if line and not line[0].isspace() and not line.startswith("#"):
            return line.startswith(_BLOCK_OPENERS)
    return False


def imports_of(tree: ast.Module) -> list[ImportedName]:
    """Module-level imports (and those inside a top-level ``try``/``if``)."""
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
    return out
