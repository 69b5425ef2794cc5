"""amplint's runtime companion: ``amplint verify`` and its Python API ``verify()``.

Importing this package does not import torch (the linter must stay torch-free); torch is loaded
when a run starts. Install with ``pip install 'amplint[runtime]'``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["verify"]


def verify(*args: Any, **kwargs: Any):
    """See :func:`amplint.runtime.api.verify`."""
    from .api import verify as _verify

    return _verify(*args, **kwargs)
