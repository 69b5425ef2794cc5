"""A module's summary: its outline from ``ast``, what its functions do from the libcst facts.

The same :func:`~amplint.amp.summaries.module_summary` answers for a linted file (from the facts
its rules use) and for a module of the project a rule asks about (parsed here, focused on the
definitions a summary can record something of, and cached by content by the caller).
"""

from __future__ import annotations

from amplint.project.outline import outline_of
from amplint.project.quiet_parse import parse
from amplint.project.records import ModuleSummary


def summarize_text(text: str, path: str = "<module>", only: frozenset[str] | None = None) -> ModuleSummary:
    """``only``: the summary of these top-level definitions alone (a function, or a class and its
    methods), read from a parse of them and of what they may reach; the module's imports and
    defined names are all there still."""
    tree = parse(text)
    if tree is None:
        return ModuleSummary()
    import libcst as cst

    from amplint.amp.facts import FileFacts
    from amplint.amp.summaries import module_summary, signature_summaries
    from amplint.cst_parse import parse_module
    from amplint.focus import EVENT_TOKENS, blanked_whole, definitions_reached, focus_source
    from amplint.positions import Positions

    outline = outline_of(tree)
    if only is not None and blanked_whole(text, EVENT_TOKENS, tree, set(only)):
        # Not one of them is defined here, or holds what a summary records: their signatures
        # are all there is to say, as in the whole module's summary.
        return ModuleSummary(signature_summaries(outline, only), outline.imports, (), outline.defined)
    definitions = definitions_reached(tree, text, set(only)) if only is not None else None
    focused = focus_source(text, EVENT_TOKENS, tree, definitions) or text
    del tree
    try:
        module = parse_module(focused)
        facts = FileFacts(module, Positions(module, focused), path)
    except (cst.ParserSyntaxError, RecursionError):
        # Python reads it, amplint's parser cannot: its definitions are still known.
        return ModuleSummary(imports=outline.imports, defined=outline.defined)
    summary = module_summary(facts, outline)
    return summary.narrowed(only) if only is not None else summary
