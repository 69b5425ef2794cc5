"""amplint: find, fix and verify misuse of PyTorch automatic mixed precision."""

from __future__ import annotations

from amplint.errors import NotLinted

__version__ = "0.1.0"

__all__ = ["__version__", "lint_source", "fix_source", "NotLinted"]


def lint_source(code: str, path="<stdin>", settings=None):
    """Findings (:class:`amplint.model.Finding`) for one source text; see :func:`amplint.api.lint_source`.

    Raises :class:`NotLinted` for a text amplint could not lint at all."""
    from amplint.api import lint_source as _lint_source

    return _lint_source(code, path, settings)


def fix_source(code: str, path="<stdin>", settings=None, unsafe: bool = False) -> str:
    """The source text with every safe fix (and unsafe ones, if asked) applied; see :func:`amplint.api.fix_source`.

    Raises :class:`NotLinted` for a text amplint could not lint at all."""
    from amplint.api import fix_source as _fix_source

    return _fix_source(code, path, settings, unsafe)
