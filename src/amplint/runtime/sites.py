"""Where in the user's code a hooked torch call came from."""

from __future__ import annotations

import os
import sys

_OWN_DIR = os.path.dirname(os.path.abspath(__file__))
# wrappers between the user's call and our hook (deprecation decorators, context managers)
_STDLIB_MARKERS = (
    os.sep + "runpy.py",
    os.sep + "contextlib.py",
    os.sep + "threading.py",
    os.sep + "typing_extensions.py",
    os.sep + "functools.py",
    os.sep + "warnings.py",
)
_torch_dir: str | None = None


def user_frame() -> tuple[str, int]:
    """The innermost frame that belongs to neither torch, amplint's runtime nor the stdlib glue.

    Walking from the innermost frame (rather than a fixed depth) keeps this right whatever
    number of torch wrappers sit between the user's call and our hook.
    """
    global _torch_dir
    if _torch_dir is None:
        import torch

        _torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
    frame = sys._getframe(1)
    while frame is not None:
        fn = frame.f_code.co_filename
        if not (fn.startswith((_torch_dir, _OWN_DIR, "<")) or fn.endswith(_STDLIB_MARKERS)):
            return fn, frame.f_lineno
        frame = frame.f_back
    return "<unknown>", 0
