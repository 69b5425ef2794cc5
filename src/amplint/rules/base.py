"""The rule contract: metadata, docs and examples in one class, ``check`` as a query over facts.

A rule never walks the syntax tree itself; it asks :class:`amplint.amp.FileFacts`.
Subclassing :class:`Rule` registers the rule, so adding a rule never touches the engine.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from amplint.model import FixSafety, Location, Severity
from amplint.rules.metadata import documentation_of, python_block_of, section_of, url_of

# libcst and the fix values only for annotations: importing this module (and with it a rule's
# metadata) must not import libcst.
TYPE_CHECKING = False  # typing itself is not imported: a clean run does not need it
if TYPE_CHECKING:
    from typing import ClassVar, Union

    import libcst as cst

    from amplint.amp import FileFacts
    from amplint.fix import Fix, NoFix

DOC_SECTIONS = (
    "What it does",
    "Why is this bad?",
    "Example",
    "Use instead",
    "Fix safety",
    "References",
)
# Prefilter triggers of rules that need a GradScaler: a scaler is in scope only if the
# file constructs one (GradScaler), names one (scaler), or uses one (unscale_, .scale().
SCALER_TRIGGERS = ("scaler", "Scaler", "unscale_", ".scale(")
AMP_RECIPE = "https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html"
AMP_DOCS = "https://pytorch.org/docs/stable/amp.html"
AMP_EXAMPLES = "https://pytorch.org/docs/stable/notes/amp_examples.html"


@dataclass
class Violation:
    """What a rule yields: a message at a libcst node, with a fix or the reason there is none."""

    code: str
    node: cst.CSTNode
    message: str
    fix: Fix | None = None
    no_fix_reason: str | None = None
    # The node whose first line carries the suppression comment (defaults to ``node``).
    noqa_node: cst.CSTNode | None = None
    # Where the finding is, when that is only part of ``node`` (a directive inside a comment).
    span: tuple[Location, Location] | None = None


@dataclass(frozen=True)
class Invalid:
    """An example that must produce the rule's finding, and optionally its exact fix."""

    code: str
    fixed: str | None = None
    unsafe: bool = False  # the expected fix needs --unsafe-fixes


RULES: dict[str, type["Rule"]] = {}


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    severity: ClassVar[Severity] = Severity.ERROR
    fix_safety: ClassVar[FixSafety] = FixSafety.NONE
    # When a finding gets no fix ("when an import has other uses"); empty: every finding has one.
    # fix_safety says what the fixes offered are: all safe, all unsafe, or either (SOMETIMES).
    fix_withheld: ClassVar[str] = ""
    default_enabled: ClassVar[bool] = True
    # Literal substrings (not regexes) of the raw file: a file containing none of
    # them cannot hold this rule's finding, so the prefilter skips parsing it.
    triggers: ClassVar[tuple[str, ...]] = ()
    # Literal substrings that all occur in any file holding this rule's finding (beside one of
    # the triggers): a file that lacks one is skipped for this rule. For rules whose trigger is
    # common (a framework's name) but whose finding needs something rarer as well.
    requires: ClassVar[tuple[str, ...]] = ()
    # An ASCII regular expression that matches the raw text of every file holding this rule's
    # finding, when literal substrings cannot say enough (AMP100: a directive naming an AMP code).
    requires_match: ClassVar[str] = ""
    # Extra literal substrings marking definitions the rule must see in a file that
    # passed the prefilter (the focused parse blanks definitions holding none of
    # the triggers, these or a training-step token).
    focus_tokens: ClassVar[tuple[str, ...]] = ()
    valid: ClassVar[tuple[str, ...]] = ()
    invalid: ClassVar[tuple[Union[str, Invalid], ...]] = ()
    # Runs once every other rule has run on the file and may ask ``facts.suppressions`` what
    # their findings' ``# noqa`` directives suppressed (AMP100).
    after_other_rules: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "code" in cls.__dict__:
            if cls.code in RULES and RULES[cls.code] is not cls:
                raise RuntimeError(f"duplicate rule code {cls.code}")
            RULES[cls.code] = cls

    def __init__(self, facts: "FileFacts") -> None:
        self.facts = facts

    def check(self) -> Iterator[Violation]:
        raise NotImplementedError

    def violation(
        self,
        node: cst.CSTNode,
        message: str,
        fix: Fix | NoFix | None = None,
        noqa_node: cst.CSTNode | None = None,
    ) -> Violation:
        """A finding at ``node``; ``fix`` is its fix, or the reason it has none."""
        from amplint.fix import NoFix  # a rule that reports has imported libcst already

        if isinstance(fix, NoFix):
            return Violation(self.code, node, message, None, fix.reason, noqa_node)
        return Violation(self.code, node, message, fix, None, noqa_node)

    @classmethod
    def documentation(cls) -> str:
        return documentation_of(cls.__doc__)

    @classmethod
    def doc_section(cls, title: str) -> str:
        """The text under ``## title`` in the rule's documentation."""
        return section_of(cls.documentation(), title)

    @classmethod
    def doc_code_block(cls, title: str) -> str:
        return python_block_of(cls.doc_section(title))

    @classmethod
    def url(cls) -> str:
        return url_of(cls.code)
