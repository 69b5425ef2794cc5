"""``--add-noqa``: suppress every current finding with a ``# noqa: CODE`` on its line.

For adopting amplint on a code base with many findings: new code is checked from day one,
old findings are marked where they are. An existing directive of any tool is extended
(``# noqa: E501`` becomes ``# noqa: E501, AMP001``) rather than duplicated, so flake8 and
ruff keep reading it. A comment is only added where Python allows one: not inside a
multi-line string and not after a backslash continuation (those findings are counted as
not suppressed). The result must have the same syntax tree as the input, or nothing is written.
Notebooks are edited in their cells (:mod:`amplint.add_noqa_notebook`).
"""

from __future__ import annotations

import tokenize
from pathlib import Path
from typing import Iterable

import amplint.noqa as noqa
from amplint.add_noqa_notebook import add_noqa_to_notebook
from amplint.add_noqa_text import NoqaResult, add_directives, same_tree
from amplint.model import FileError, FileResult


def add_noqa_to_files(results: Iterable[FileResult], paths: dict[str, str]) -> NoqaResult:
    """Write the directives for each result's findings into its file (``paths``: display name -> path)."""
    outcome = NoqaResult()
    for result in results:
        if not any(f.code not in noqa.UNSUPPRESSIBLE for f in result.findings):
            continue
        path = Path(paths.get(result.filename, result.filename))
        if result.cell_sources is not None:
            add_noqa_to_notebook(result, path, outcome)
        else:
            _add_noqa_to_python(result, path, outcome)
    return outcome


def _add_noqa_to_python(result: FileResult, path: Path, outcome: NoqaResult) -> None:
    from amplint.fixwrite import WriteError, write_fix
    from amplint.sourcefile import SourceError, decode_source, encode_source, read_bytes

    try:
        data = read_bytes(path)
        source = decode_source(data, result.filename)
        new_text, added, skipped = add_directives(source.text, result.findings)
    except (SourceError, SyntaxError, tokenize.TokenError) as exc:
        outcome.errors.append(FileError(result.filename, f"{result.filename}: cannot add noqa directives ({exc})"))
        return
    outcome.not_placeable.extend(f"{result.filename}:{row}" for row in skipped)
    if not added:
        return
    if not same_tree(source.text, new_text):
        outcome.errors.append(FileError(result.filename, f"{result.filename}: not changed: adding noqa directives would change the code"))
        return
    try:
        write_fix(path, data, encode_source(source, new_text), result.filename)
    except WriteError as exc:
        outcome.errors.append(FileError(result.filename, str(exc)))
        return
    outcome.added += added
    outcome.files += 1
