"""``--add-noqa`` in a Jupyter notebook: the directives go at the end of the cells' lines.

A notebook's findings are located in cells, but its ``# noqa`` comments are read on the
notebook's joined Python text (:attr:`Notebook.text`). So the findings' rows are mapped back
to that text, the directives are added there exactly as in a ``.py`` file, and the text is
written back through the cells the way ``--fix`` writes them (:mod:`amplint.notebook_file`):
outside the changed lines the notebook stays byte for byte as it was. A line that stands for
IPython syntax (``%matplotlib inline``, ``!pip``) cannot take a comment. A notebook that
cannot be mapped either way is left as it is, with one line saying why.
"""

from __future__ import annotations

import tokenize
from collections import defaultdict
from pathlib import Path

import amplint.noqa as noqa
from amplint.add_noqa_text import NoqaResult, add_directives_at, same_tree
from amplint.model import FileError, FileResult
from amplint.notebook import Notebook


def _rows_in_text(notebook: Notebook, result: FileResult) -> dict[int, set[str]] | None:
    """The codes to add on each row of the notebook's text; ``None`` if a finding's cell line is not there."""
    codes_by_row: dict[int, set[str]] = defaultdict(set)
    for finding in result.findings:
        if finding.code in noqa.UNSUPPRESSIBLE:
            continue
        row = None if finding.cell is None else notebook.text_row(finding.cell, finding.noqa_row or finding.location.row)
        if row is None:
            return None
        codes_by_row[row].add(finding.code)
    return codes_by_row


def add_noqa_to_notebook(result: FileResult, path: Path, outcome: NoqaResult) -> None:
    """Add the directives for ``result``'s findings to the notebook at ``path``; what happened goes into ``outcome``."""
    from amplint.fixwrite import WriteError
    from amplint.notebook import NotebookError, read_notebook
    from amplint.notebook_file import decode_notebook, write_notebook
    from amplint.sourcefile import MAX_NOTEBOOK_BYTES, SourceError, read_bytes

    name = result.filename

    def refuse(reason: str) -> None:
        outcome.errors.append(FileError(name, f"{name}: not changed: {reason}"))

    try:
        data = read_bytes(path, MAX_NOTEBOOK_BYTES)
        raw = decode_notebook(data)
        notebook = read_notebook(raw)
    except (SourceError, NotebookError) as exc:
        return refuse(f"cannot add noqa directives ({exc})")
    if result.source is not None and raw != result.source:
        return refuse("the notebook changed on disk since it was linted; run again")
    codes_by_row = _rows_in_text(notebook, result)
    if codes_by_row is None:
        return refuse("a finding's line cannot be found in the notebook's cells")
    placeholders = notebook.placeholder_rows()
    skipped = sorted(row for row in codes_by_row if row in placeholders)
    try:
        new_text, added, unplaceable = add_directives_at(
            notebook.text, {row: codes for row, codes in codes_by_row.items() if row not in placeholders}
        )
    except (SyntaxError, tokenize.TokenError) as exc:
        return refuse(f"cannot add noqa directives ({exc})")
    for row in sorted(skipped + unplaceable):
        cell, cell_row = notebook.locate(row)
        outcome.not_placeable.append(f"{name}:cell {cell}:{cell_row}")
    if not added:
        return None
    if not same_tree(notebook.text, new_text):
        return refuse("adding noqa directives would change the code")
    rewritten = notebook.with_text(new_text)
    if rewritten is None:
        return refuse("the cells with noqa directives cannot be written back into the notebook")
    try:
        write_notebook(path, data, rewritten, name)
    except WriteError as exc:
        outcome.errors.append(FileError(name, str(exc)))
        return None
    outcome.added += added
    outcome.files += 1
    return None
