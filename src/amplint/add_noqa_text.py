"""Where ``# noqa`` comments go in one Python text, and the check that adding them changed no code.

Used by ``--add-noqa`` for Python files (:mod:`amplint.add_noqa`) and for notebook cells
(:mod:`amplint.add_noqa_notebook`).
"""

from __future__ import annotations

import ast
import re
import tokenize
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable

import amplint.noqa as noqa
from amplint.model import FileError, Finding

_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")


@dataclass
class NoqaResult:
    added: int = 0  # findings newly suppressed
    files: int = 0  # files changed
    not_placeable: list[str] = field(default_factory=list)  # "path:row" where no comment can go
    errors: list[FileError] = field(default_factory=list)


def _comment_rows(text: str) -> tuple[set[int], dict[int, tokenize.TokenInfo]]:
    """Rows whose end can take a comment (they end a statement or a bracketed line), and each row's comment."""
    ends: set[int] = set()
    comments: dict[int, tokenize.TokenInfo] = {}
    for token in noqa.python_tokens(text):
        if token.type in (tokenize.NEWLINE, tokenize.NL):
            ends.add(token.start[0])
        elif token.type == tokenize.COMMENT:
            comments[token.start[0]] = token
    return ends, comments


def _merged_directive(found: noqa.RowDirective, codes: list[str]) -> str:
    """``found``'s comment with ``codes`` appended to the codes its directive lists."""
    comment, match = found.comment, found.match
    listed = ", ".join(noqa.split_codes(match.group("codes")) + codes)
    return comment[: match.start("sep")] + ": " + listed + comment[match.end("codes"):]


def rows_to_suppress(findings: Iterable[Finding]) -> dict[int, set[str]]:
    """The codes to list in each row's directive (the row a finding's ``# noqa`` is read on)."""
    codes_by_row: dict[int, set[str]] = defaultdict(set)
    for finding in findings:
        if finding.code not in noqa.UNSUPPRESSIBLE:
            codes_by_row[finding.noqa_row or finding.location.row].add(finding.code)
    return codes_by_row


def add_directives(text: str, findings: Iterable[Finding]) -> tuple[str, int, list[int]]:
    """(new text, findings suppressed, rows where no comment can go)."""
    return add_directives_at(text, rows_to_suppress(findings))


def add_directives_at(text: str, codes_by_row: dict[int, set[str]]) -> tuple[str, int, list[int]]:
    """``text`` with each row's codes in its ``# noqa`` directive: (new text, codes added, rows
    where no comment can go)."""
    if not codes_by_row:
        return text, 0, []
    ends, comments = _comment_rows(text)
    # The directives the suppressor reads: a code counts as added only where it was not yet listed.
    directives = noqa.directives_in_comments(comments.values())
    parts = _LINE_BREAK.split(text)  # line, break, line, break, ..., last line
    lines, breaks = parts[0::2], parts[1::2]
    added = 0
    skipped: list[int] = []
    for row, codes in sorted(codes_by_row.items()):
        if row not in ends or row > len(lines):
            skipped.append(row)
            continue
        found = directives.get(row)
        listed = found.codes if found is not None else frozenset()
        if listed is None:
            continue  # a bare ``# noqa`` already suppresses every code
        missing = sorted(code for code in codes if code.upper() not in listed)
        if not missing:
            continue
        line = lines[row - 1]
        comment = comments.get(row)
        if found is not None:
            end = found.column + len(found.comment)
            lines[row - 1] = line[: found.column] + _merged_directive(found, missing) + line[end:]
        elif comment is not None:
            end = comment.end[1]
            lines[row - 1] = line[:end] + f"  # noqa: {', '.join(missing)}" + line[end:]
        else:
            lines[row - 1] = line.rstrip(" \t") + f"  # noqa: {', '.join(missing)}"
        added += len(missing)
    new_text = "".join(line + brk for line, brk in zip(lines, breaks + [""]))
    return new_text, added, skipped


def same_tree(old: str, new: str) -> bool:
    try:
        return ast.dump(ast.parse(old)) == ast.dump(ast.parse(new))
    except (SyntaxError, ValueError, RecursionError):
        return False
