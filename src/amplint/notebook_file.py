"""A notebook file's bytes: decoded for linting, and written back after its cells were edited.

Every edit of a notebook on disk (``--fix``, AMP100's removal of unused ``# noqa``,
``--add-noqa``) is a new Python text for :meth:`Notebook.with_text`, which puts it into the
cells, and goes through :func:`write_notebook`, so all of them keep the BOM, refuse to write
what does not load as the same notebook, and never write over a newer edit.
"""

from __future__ import annotations

import codecs
import json
from pathlib import Path

from amplint.notebook import NotebookError

_BOM = codecs.BOM_UTF8


def decode_notebook(data: bytes) -> str:
    """The notebook's JSON text (a UTF-8 BOM is allowed); :class:`NotebookError` if not UTF-8."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise NotebookError("a notebook must be UTF-8 JSON") from None


def encode_notebook(original: bytes, rewritten: str) -> bytes:
    """``rewritten`` as bytes, with the BOM ``original`` had."""
    return (_BOM if original.startswith(_BOM) else b"") + rewritten.encode("utf-8")


def same_cells(old: str, new: str) -> bool:
    """Whether ``new`` loads as JSON with the cells of ``old``: as many, of the same types."""
    try:
        before, after = json.loads(old), json.loads(new)
        return [cell.get("cell_type") for cell in before["cells"]] == [cell.get("cell_type") for cell in after["cells"]]
    except (ValueError, TypeError, KeyError, AttributeError):
        return False


def write_notebook(path: Path, original: bytes, rewritten: str, name: str) -> None:
    """Replace the notebook at ``path`` (read as ``original``) by ``rewritten``, or raise
    :class:`amplint.fixwrite.WriteError` and write nothing."""
    from amplint.fixwrite import WriteError, write_fix

    if not same_cells(decode_notebook(original), rewritten):
        raise WriteError(f"{name}: the edited notebook would not load as the same notebook; not written")
    write_fix(path, original, encode_notebook(original, rewritten), name)
