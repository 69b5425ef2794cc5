"""Import what parsing and linting a file needs, once, reusing compiled dataclass code.

libcst, the facts layer, positions, the focused parse, the project summaries and the fix
machinery are imported only when a file gets past the prefilter (a run whose files all fail it
never imports libcst). They are imported together here, inside ``reused_dataclass_code``, because
their few hundred dataclasses are most of their import time. Rule modules are imported apart, only
those a file's text can trigger.
"""

from __future__ import annotations

import sys


def import_parsing_modules() -> None:
    """Import libcst and amplint's parsing modules (a no-op once done)."""
    if "amplint.fix.apply" in sys.modules:
        return
    from amplint.dataclass_code import reused_dataclass_code
    from amplint.gc_policy import importing

    with importing(), reused_dataclass_code("parsing"):
        import libcst  # noqa: F401

        import amplint.amp  # noqa: F401
        import amplint.cst_parse  # noqa: F401
        import amplint.fix.apply  # noqa: F401
        import amplint.focus  # noqa: F401
        import amplint.positions  # noqa: F401
        import amplint.project.query  # noqa: F401
        import amplint.amp.summaries  # noqa: F401
        import amplint.project.outline  # noqa: F401
        import amplint.project.summarize  # noqa: F401
