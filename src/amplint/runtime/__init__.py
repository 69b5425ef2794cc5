"""amplint's runtime companion: ``amplint verify`` and its Python API ``verify()``.

Importing this package does not import torch (the linter must stay torch-free); torch is loaded
when a run starts. Install with ``pip install 'amplint[runtime]'``.
"""

from __future__ import annotations

# api imports torch only inside verify(), so the real function (its signature and docstring
# in help() and inspect.signature) can be re-exported without loading torch.
from .api import VerifyResult, verify

__all__ = ["verify", "VerifyResult"]
