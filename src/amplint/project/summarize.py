"""A module's summary: its outline from ``ast``, what its functions do from the libcst facts.

The same :func:`~amplint.amp.summaries.module_summary` answers for a linted file (from the facts
its rules use) and for a module of the project a rule asks about (parsed here, focused on the
definitions a summary can record something of, and cached by content by the caller).
"""

from __future__ import annotations

from amplint.project.outline import outline_of
from amplint.project.quiet_parse import parse
from amplint.project.records import ModuleSummary


def summarize_text(text: str, path: str = "<module>") -> ModuleSummary:
    tree = parse(text)
    if tree is None:
        return ModuleSummary()
    import libcst as cst

    from amplint.amp.facts import FileFacts
    from amplint.amp.summaries import module_summary
    from amplint.cst_parse import parse_module
    from amplint.focus import EVENT_TOKENS, focus_source
    from amplint.positions import Positions

    outline = outline_of(tree)
    focused = focus_source(text, EVENT_TOKENS, tree) or text
    del tree
    try:
        module = parse_module(focused)
        facts = FileFacts(module, Positions(module), path)
    except (cst.ParserSyntaxError, RecursionError):
        # Python reads it, amplint's parser cannot: its definitions are still known.
        return ModuleSummary(imports=outline.imports, defined=outline.defined)
    return module_summary(facts, outline)
