"""amplint as a flake8 plugin: ``flake8 --select AMP`` reports amplint's findings in flake8's format.

flake8 parses the file first (a syntax error is its E999, and tree plugins then do not run);
amplint lints the same lines flake8 read, with the amplint configuration (``[tool.amplint]``)
that applies to the file, so ``ignore``, ``per-file-ignores`` and ``target-torch`` work as with
``amplint check``. ``# noqa`` comments are honoured by both tools on the reported line, and by
amplint on the statement's first line; flake8's ``--disable-noqa`` turns both off.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterator

import amplint
from amplint.file_settings import directory_of, settings_for_directory
from amplint.model import SYNTAX_ERROR_CODE

# The one code under which amplint reports a file it could not lint (it is never reported clean).
CANNOT_LINT_CODE = SYNTAX_ERROR_CODE


# One configuration lookup per folder, not per file.
_settings_for_directory = lru_cache(maxsize=256)(settings_for_directory)


class AmplintChecker:
    name = "amplint"
    version = amplint.__version__
    disable_noqa = False

    def __init__(self, tree: Any, filename: str, lines: list[str]) -> None:
        # ``tree`` is unused (amplint parses with libcst) but makes flake8 run this as a tree
        # plugin, after its own parse succeeded.
        self.filename = filename
        self.lines = lines

    @classmethod
    def parse_options(cls, options: Any) -> None:
        cls.disable_noqa = bool(getattr(options, "disable_noqa", False))

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        from amplint.config import ConfigError
        from amplint.engine import lint_text

        try:
            settings = _settings_for_directory(str(directory_of(self.filename)), not self.disable_noqa)
        except ConfigError as exc:
            yield 1, 0, f"{CANNOT_LINT_CODE} amplint cannot lint this file: {exc}", type(self)
            return
        try:
            result = lint_text("".join(self.lines), self.filename, settings, edits=False)
        except RecursionError:
            yield 1, 0, f"{CANNOT_LINT_CODE} amplint cannot lint this file: too deeply nested", type(self)
            return
        for finding in result.findings:
            # flake8 columns are 0-based; amplint's are 1-based.
            yield finding.location.row, finding.location.column - 1, f"{finding.code} {finding.message}", type(self)
        for error in result.errors:
            yield 1, 0, f"{CANNOT_LINT_CODE} amplint cannot lint this file: {error.message}", type(self)
