"""The public Python API: ``lint_source`` and ``fix_source``, with their arguments checked.

A caller gets a ``TypeError`` or ``ValueError`` whose message names the argument, never an
``AttributeError`` from deep inside the engine. Settings may be a :class:`Settings` or a
mapping with the keys of ``[tool.amplint]`` (``{"select": ["AMP001"]}``). A text amplint
could not lint at all raises :class:`NotLinted`, where ``amplint check`` says "not linted".
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from amplint.errors import NotLinted
from amplint.model import FileResult, Finding
from amplint.settings import SelectionError, Settings

# Keys that only concern file discovery: meaningless for one source text.
_DISCOVERY_KEYS = ("exclude", "extend-exclude", "extend-include", "extension")
_CODE_LISTS = ("select", "extend_select", "ignore", "unfixable")


def _check_code(code: Any) -> str:
    if not isinstance(code, str):
        raise TypeError(f"code must be a str (the source text), not {type(code).__name__}")
    return code


def _check_path(path: Any) -> str:
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise TypeError(f"path must be a str or os.PathLike, not {type(path).__name__}")
    return path


def _settings_from_mapping(table: Mapping) -> Settings:
    from amplint.config import ConfigError, parse_table

    if not all(isinstance(key, str) for key in table):
        raise TypeError("settings keys must be strings such as 'select'")
    # Accept the Python spelling of a key too (extend_select for extend-select).
    normalized = {
        key.replace("_", "-"): list(value) if isinstance(value, tuple) else value for key, value in table.items()
    }
    for key in _DISCOVERY_KEYS:
        if key in normalized:
            raise ValueError(f"settings: '{key}' selects files to lint and does not apply to one source text")
    try:
        config = parse_table(normalized, "settings:", None)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    return Settings(
        select=config.select or (),
        extend_select=config.extend_select,
        ignore=config.ignore,
        per_file_ignores=config.per_file_ignores,
        target_torch=config.target_torch,
        target_transformers=config.target_transformers,
        unfixable=config.unfixable,
        root=os.getcwd(),
    )


def _validated(settings: Settings) -> Settings:
    for name in _CODE_LISTS:
        value = getattr(settings, name)
        # A bare string would be read character by character ("A" selects every AMP rule).
        if isinstance(value, str) or not all(isinstance(item, str) for item in value):
            raise TypeError(f"settings.{name} must be a tuple of rule codes, e.g. ('AMP001',), not {value!r}")
    try:
        settings.validate()
    except SelectionError as exc:
        raise ValueError(f"settings: {exc}") from None
    return settings


def check_settings(settings: Any) -> Settings:
    """``settings`` as a validated :class:`Settings` (``None`` means the defaults)."""
    if settings is None:
        return Settings()
    if isinstance(settings, Settings):
        return _validated(settings)
    if isinstance(settings, Mapping):
        return _validated(_settings_from_mapping(settings))
    raise TypeError(
        f"settings must be None, an amplint.settings.Settings or a mapping such as "
        f"{{'select': ['AMP001']}}, not {type(settings).__name__}"
    )


def lint_document(code: str, path: str, settings: Settings, **kwargs) -> FileResult:
    """``engine.lint_text`` for a text held in memory (API, editor): a text that does not parse
    is reported even when the prefilter finds nothing AMP-related in it. A text that could not
    be linted comes back with ``errors`` (the language server logs them), not as :class:`NotLinted`."""
    from amplint.engine import lint_text

    result = lint_text(code, path, settings, **kwargs)
    if result.skipped and _has_syntax_error(code, path):
        # The prefilter skipped a text without any AMP trigger; a broken file must still say so.
        result = lint_text(code, path, replace(settings, prefilter=False), **kwargs)
    return result


def _has_syntax_error(code: str, path: str) -> bool:
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(code, path, "exec", ast.PyCF_ONLY_AST)
    except SyntaxError:
        return True
    except (ValueError, RecursionError, MemoryError):
        return False
    return False


def _lint_or_raise(code: str, path: str, settings: Settings, **kwargs) -> FileResult:
    """``lint_document``, raising :class:`NotLinted` where ``amplint check`` says it did not lint:
    returning no findings then would pass the text as clean."""
    try:
        result = lint_document(code, path, settings, **kwargs)
    except RecursionError:
        # The same line as ``amplint check`` (jobs.process_file) for the same text.
        raise NotLinted(f"{path}: too deeply nested to lint", path) from None
    # Internal errors (an amplint bug in one rule) and warnings leave the findings meaningful.
    not_linted = [error for error in result.errors if not error.internal and not error.warning]
    if not_linted:
        raise NotLinted(not_linted[0].message, path)
    return result


def lint_source(code: str, path: str | os.PathLike = "<stdin>", settings: Settings | Mapping | None = None) -> list[Finding]:
    """Findings for one source text, as ``amplint check`` would report them.

    ``path`` names the text (for messages and ``per-file-ignores``); the file is not read.
    A text that does not parse gives one ``AMP000`` finding at the error's position. A text
    amplint could not lint at all (an expression nested too deep for its parser) raises
    :class:`NotLinted` with the reason ``amplint check`` prints.
    """
    code = _check_code(code)
    return _lint_or_raise(code, _check_path(path), check_settings(settings)).findings


def fix_source(
    code: str, path: str | os.PathLike = "<stdin>", settings: Settings | Mapping | None = None, unsafe: bool = False
) -> str:
    """The text after applying every safe fix (and the unsafe ones when ``unsafe`` is true).

    A text that does not parse is returned unchanged (``lint_source`` reports why); a text
    amplint could not lint at all raises :class:`NotLinted`, as ``lint_source`` does.
    """
    code = _check_code(code)
    if not isinstance(unsafe, bool):
        raise TypeError(f"unsafe must be a bool, not {type(unsafe).__name__}")
    result = _lint_or_raise(code, _check_path(path), check_settings(settings), fix=True, unsafe=unsafe)
    return result.source if result.source is not None else code
