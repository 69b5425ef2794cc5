"""Jupyter notebooks: their code cells as one Python text, findings mapped back to cells, and
fixes written back into the cells with the rest of the notebook byte for byte as it was.

The code cells are joined in order, each followed by a marker comment line, so cell boundaries
survive a fix. IPython syntax that is not Python is replaced by a marked placeholder of the
same indentation, and put back when a fixed cell is written:

- line magics and shell escapes (``%matplotlib inline``, ``!pip install x``, ``x = !ls``),
  help lines (``model?``), and the package-manager magics IPython runs without a ``%``
  (automagic, on by default): ``pip install x``, ``conda install x``;
- ``%%time`` / ``%%timeit`` / ``%%capture`` first lines (their body is Python);
- any other cell magic (``%%bash``, ``%%writefile``): the whole cell.

A cell whose first non-blank line is indented is read as IPython reads it: that indentation is
taken off every line that starts with it (IPython's ``leading_indent`` cleanup), so `` !pip
install x`` or a pasted indented block is not an "unexpected indent"; findings' columns and
fixed cells get it back.

Cells are numbered from 1 by their position in the notebook (markdown cells count), which is
where an editor shows them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

CELL_MARK = "# amplint: end of cell "
MAGIC_MARK = "# amplint: notebook magic "
_PYTHON_CELL_MAGICS = ("%%time", "%%timeit", "%%capture")
_LINE_MAGIC = re.compile(r"^([ \t]*)(?:[%!]|\?\??\w)")
_ASSIGNED_MAGIC = re.compile(r"^([ \t]*[\w.]+[ \t]*=[ \t]*)[%!]")
_HELP = re.compile(r"^([ \t]*)[\w.]+\?\??[ \t]*$")
# ``pip install x`` at the start of a line is never Python (two names side by side); IPython runs
# it as the ``%pip`` magic.
_AUTOMAGIC = re.compile(r"^(?:pip|conda|mamba)[ \t]+(?:install|uninstall|list|show|freeze|download|update|remove|create)\b")
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")
_LINE_REFERENCE = re.compile(r"\bline (\d+)\b")


class NotebookError(Exception):
    """The file is not a notebook amplint can read; the message says why."""


def _split_lines(text: str) -> list[str]:
    lines = _LINES.findall(text)
    return lines[:-1] if lines and lines[-1] == "" else lines


@dataclass
class CodeCell:
    number: int  # 1-based position among all cells
    source: list[str]  # the cell's lines, with their endings
    first_row: int = 0  # row of the cell's first line in the joined text
    magics: dict[int, str] = field(default_factory=dict)  # placeholder id -> original line
    # (row, column, message) of the syntax error that keeps the cell out of the joined text
    syntax_error: tuple[int, int, str] | None = None
    # The indentation IPython takes off the lines that start with it (the first non-blank line's),
    # and the lines it takes it off.
    dedent: str = ""
    dedented: frozenset[int] = frozenset()


@dataclass
class Notebook:
    raw: str
    data: dict
    cells: list[CodeCell]
    text: str = ""  # the code cells as one Python text

    def locate(self, row: int) -> tuple[int, int]:
        """(cell number, row within the cell) of a row of :attr:`text`."""
        owner = self.cells[0]
        for cell in self.cells:
            if cell.first_row <= row:
                owner = cell
        return owner.number, max(1, row - owner.first_row + 1)

    def cell_text(self, number: int) -> str:
        cell = next(c for c in self.cells if c.number == number)
        return "".join(cell.source)

    def text_row(self, number: int, row: int) -> int | None:
        """The row of :attr:`text` that is row ``row`` of cell ``number``; ``None`` if there is none."""
        cell = next((c for c in self.cells if c.number == number), None)
        if cell is None or not 1 <= row <= len(cell.source):
            return None
        return cell.first_row + row - 1

    def column_offset(self, number: int, row: int) -> int:
        """What to add to a column of row ``row`` of cell ``number`` in :attr:`text` to get the
        column in the cell: the indentation IPython takes off that line."""
        cell = next((c for c in self.cells if c.number == number), None)
        return len(cell.dedent) if cell is not None and row - 1 in cell.dedented else 0

    def placeholder_rows(self) -> set[int]:
        """Rows of :attr:`text` that stand for IPython syntax (their comment must stay as it is)."""
        return {cell.first_row + index for cell in self.cells for index in cell.magics}

    def with_text(self, fixed: str) -> str | None:
        """The notebook's JSON with the code cells taken from ``fixed`` (an edited :attr:`text`),
        or ``None`` when the cells cannot be mapped back or the JSON cannot be reproduced."""
        parts = _split_cells(fixed, len(self.cells))
        if parts is None:
            return None
        # Shallow copies: the notebook stays as it was read, whatever is asked of it later.
        raw_cells = list(self.data["cells"])
        changed: dict[int, list[str] | str] = {}  # cell index -> its new source
        for cell, lines in zip(self.cells, parts):
            restored = _restore_magics(lines, cell.magics)
            if restored is None:
                return None
            if cell.dedent:
                restored = _reindent(restored, cell)
            if restored != _with_final_newline(cell.source):
                if cell.source and not cell.source[-1].endswith(("\n", "\r")) and restored and restored[-1].endswith("\n"):
                    restored[-1] = restored[-1][:-1]  # the cell had no final newline
                raw_cell = raw_cells[cell.number - 1]
                source = restored if isinstance(raw_cell["source"], list) else "".join(restored)
                raw_cells[cell.number - 1] = {**raw_cell, "source": source}
                changed[cell.number - 1] = source
        if not changed:
            return self.raw
        from amplint.notebook_json import splice_sources

        return _dumps_like({**self.data, "cells": raw_cells}, self.raw) or splice_sources(self.raw, changed)


def _with_final_newline(lines: list[str]) -> list[str]:
    lines = list(lines)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n"
    return lines


def _leading_indent(lines: list[str]) -> str:
    """The indentation IPython's cleanup takes off a cell: that of its first line once the
    leading blank lines are dropped (``leading_empty_lines``, then ``leading_indent``)."""
    first = next((line for line in lines if line.strip()), "")
    return re.match(r"[ \t]*", first).group(0)


def _reindent(lines: list[str], cell: CodeCell) -> list[str]:
    """A fixed cell's lines with the indentation IPython takes off put back: a line the fix kept
    is the cell's own, a line it wrote gets the cell's indentation."""
    import difflib

    original = _with_final_newline(cell.source)
    cut = len(cell.dedent)
    linted = [line[cut:] if index in cell.dedented and index not in cell.magics else line
              for index, line in enumerate(original)]
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, linted, lines, autojunk=False)
    for tag, first, last, new_first, new_last in matcher.get_opcodes():
        if tag == "equal":
            out.extend(original[first:last])
        else:
            out.extend(cell.dedent + line if line.strip() else line for line in lines[new_first:new_last])
    return out


def _python_lines(cell: CodeCell) -> tuple[list[str], dict[int, str]]:
    """The cell's lines with IPython syntax replaced by marked placeholders."""
    out: list[str] = []
    magics: dict[int, str] = {}
    original = _with_final_newline(cell.source)
    cell.dedent = _leading_indent(original)
    cell.dedented = frozenset(i for i, line in enumerate(original) if cell.dedent and line.startswith(cell.dedent))
    cut = len(cell.dedent)
    lines = [line[cut:] if index in cell.dedented else line for index, line in enumerate(original)]
    whole_cell = bool(lines) and lines[0].startswith("%%") and not lines[0].split()[0] in _PYTHON_CELL_MAGICS
    continued: str | None = None  # the indentation of a magic whose line ends in a backslash
    for index, line in enumerate(lines):
        ending = line[len(line.rstrip("\r\n")):]
        body = line[: len(line) - len(ending)]
        ident = f"{cell.number}.{index}"
        if whole_cell or (index == 0 and body.startswith("%%")):
            magics[index] = original[index]
            out.append(f"{MAGIC_MARK}{ident}{ending}")
            continue
        if continued is not None:  # ``!pip install a \`` goes on on this line, as IPython reads it
            magics[index] = original[index]
            out.append(f"{continued}pass  {MAGIC_MARK}{ident}{ending}")
            continued = continued if body.endswith("\\") else None
            continue
        assigned = _ASSIGNED_MAGIC.match(body)
        if assigned:
            magics[index] = original[index]
            out.append(f"{assigned.group(1)}None  {MAGIC_MARK}{ident}{ending}")
            continued = re.match(r"[ \t]*", body).group(0) if body.endswith("\\") else None
        elif _LINE_MAGIC.match(body) or _HELP.match(body) or _AUTOMAGIC.match(body):
            magics[index] = original[index]
            indent = re.match(r"[ \t]*", body).group(0)
            out.append(f"{indent}pass  {MAGIC_MARK}{ident}{ending}")
            continued = indent if body.endswith("\\") else None
        else:
            out.append(line)
    return out, magics


def _syntax_error(lines: list[str]) -> tuple[int, int, str] | None:
    """Python's syntax error in one cell's text, if any: Jupyter runs each cell on its own.

    A cell Python's parser gives up on is left in: the engine decides on the joined text."""
    from amplint.syntaxcheck import python_view

    error = python_view("".join(lines), "<cell>").error
    if error is None:
        return None
    return error.lineno or 1, error.offset or 1, f"SyntaxError: {error.msg}"


def _left_out(cell: CodeCell) -> list[str]:
    """Placeholders for every line of a cell that is kept out of the joined text."""
    out = []
    cell.magics = {}
    for index, line in enumerate(_with_final_newline(cell.source)):
        ending = line[len(line.rstrip("\r\n")):]
        cell.magics[index] = line
        out.append(f"{MAGIC_MARK}{cell.number}.{index}{ending}")
    return out


def _split_cells(text: str, count: int) -> list[list[str]] | None:
    parts: list[list[str]] = [[]]
    for line in _split_lines(text):
        if line.startswith(CELL_MARK):
            parts.append([])
        else:
            parts[-1].append(line)
    if len(parts) != count + 1 or parts[-1] != []:
        return None
    return parts[:-1]


def _restore_magics(lines: list[str], magics: dict[int, str]) -> list[str] | None:
    """``lines`` with each placeholder replaced by the original line; ``None`` if a fix lost,
    repeated or garbled a placeholder."""
    out: list[str] = []
    seen: set[int] = set()
    for line in lines:
        mark = line.find(MAGIC_MARK)
        if mark < 0:
            out.append(line)
            continue
        try:
            index = int(line[mark + len(MAGIC_MARK):].strip().rsplit(".", 1)[1])
        except (IndexError, ValueError):
            return None
        if index not in magics or index in seen:
            return None
        seen.add(index)
        out.append(magics[index])
    return out if seen == set(magics) else None


def _dumps_like(data: dict, raw: str) -> str | None:
    """``data`` serialised the way ``raw`` was, if ``raw`` is recognisably one of the usual
    notebook serialisations (nbformat writes ``indent=1``, no ASCII escapes, a final newline)."""
    original = json.loads(raw)
    # A notebook checked out on Windows has CRLF between its JSON lines; inside the JSON
    # strings a line break is always escaped, so every raw newline json writes is layout.
    newline = "\r\n" if "\r\n" in raw else "\n"
    for indent in (1, 2, 4, None):
        for ensure_ascii in (False, True):
            for sort_keys in (False, True):
                def dump(value) -> str:
                    return json.dumps(value, indent=indent, ensure_ascii=ensure_ascii, sort_keys=sort_keys).replace("\n", newline)

                text = dump(original)
                for ending in (newline, ""):
                    if text + ending == raw:
                        return dump(data) + ending
    return None


def read_notebook(raw: str) -> Notebook:
    """Parse a notebook's JSON and join its code cells; :class:`NotebookError` if it is not one."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise NotebookError(f"not valid notebook JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise NotebookError("not a Jupyter notebook (no list of cells)")
    language = (data.get("metadata") or {}).get("language_info", {}).get("name", "python") if isinstance(data.get("metadata"), dict) else "python"
    if isinstance(language, str) and language.lower() not in ("python", "python3", "ipython", ""):
        raise NotebookError(f"a {language} notebook, not Python")
    cells: list[CodeCell] = []
    for number, cell in enumerate(data["cells"], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", [])
        if isinstance(source, str):
            lines = _split_lines(source)
        elif isinstance(source, list) and all(isinstance(s, str) for s in source):
            lines = _split_lines("".join(source))
        else:
            raise NotebookError(f"cell {number} has a source that is neither text nor a list of lines")
        cells.append(CodeCell(number, lines))
    notebook = Notebook(raw, data, cells)
    joined: list[str] = []
    row = 1
    for cell in cells:
        lines, cell.magics = _python_lines(cell)
        cell.syntax_error = _syntax_error(lines)
        if cell.syntax_error is not None:
            # Reported as the cell's AMP000; the other cells are linted without it.
            lines = _left_out(cell)
        cell.first_row = row
        joined.extend(lines)
        joined.append(f"{CELL_MARK}{cell.number}\n")
        row += len(lines) + 1
    notebook.text = "".join(joined)
    return notebook


def lint_notebook(raw: str, filename: str, settings, fix: bool, unsafe: bool, edits: bool):
    """Lint (or fix) a notebook's code cells; findings come back located in cells.

    The result's ``source``/``original_source`` are the notebook's JSON before and after the
    fixes (what ``--fix`` writes and ``--diff`` shows), and ``cell_sources`` the cells' text for
    the source excerpts.
    """
    from amplint.engine import lint_text
    from amplint.model import FileError, FileResult, Location

    try:
        notebook = read_notebook(raw)
    except NotebookError as exc:
        return FileResult(filename=filename, errors=[FileError(filename, f"{filename}: {exc}")])
    if not notebook.cells:
        return FileResult(filename=filename, skipped=True)
    from amplint.sourcefile import MAX_FILE_BYTES

    if (size := len(notebook.text.encode("utf-8", "surrogatepass"))) > MAX_FILE_BYTES:
        return FileResult(filename=filename, errors=[FileError(
            filename, f"{filename}: its code cells are too large to lint ({size // 1024} KiB > {MAX_FILE_BYTES // 1024} KiB)")])
    result = lint_text(notebook.text, filename, settings, fix=fix, unsafe=unsafe, edits=edits)
    final = notebook
    if result.changed:
        rewritten = notebook.with_text(result.source or "")
        if rewritten is None:
            result = lint_text(notebook.text, filename, settings, fix=False, edits=edits)
            result.errors.append(FileError(filename, f"{filename}: fixes not applied: the fixed cells cannot be written back into the notebook"))
            result.original_source, result.source = None, raw
        else:
            final = read_notebook(rewritten)
            result.original_source, result.source = raw, rewritten
    else:
        result.source = raw
    _add_cell_syntax_errors(result, final, filename)

    def cell_line(match: re.Match) -> str:
        cell, row = final.locate(int(match.group(1)))
        return f"line {row} of cell {cell}"

    for finding in result.findings:
        # Rules name other lines ("the scaler steps on line 14"): rows of the joined text.
        finding.message = _LINE_REFERENCE.sub(cell_line, finding.message)
        if finding.no_fix_reason:
            finding.no_fix_reason = _LINE_REFERENCE.sub(cell_line, finding.no_fix_reason)
        cell, row = final.locate(finding.location.row)
        _, end_row = final.locate(finding.end_location.row)
        end_row = max(row, end_row)
        finding.cell = cell
        finding.location = Location(row, finding.location.column + final.column_offset(cell, row))
        finding.end_location = Location(end_row, finding.end_location.column + final.column_offset(cell, end_row))
        if finding.noqa_row is not None:
            finding.noqa_row = final.locate(finding.noqa_row)[1]
        if finding.fix is not None:
            finding.fix.edits = []  # edits address the joined text, not the notebook's JSON
    result.findings.sort(key=lambda f: f.sort_key())
    result.cell_sources = {cell.number: "".join(cell.source) for cell in final.cells}
    return result


def _add_cell_syntax_errors(result, notebook: Notebook, filename: str) -> None:
    """An AMP000 for each cell left out of the joined text, at its row of that text."""
    from amplint.engine import syntax_error_finding

    for cell in notebook.cells:
        if cell.syntax_error is not None:
            row, column, message = cell.syntax_error
            result.findings.append(syntax_error_finding(cell.first_row + row - 1, column, message, filename))
