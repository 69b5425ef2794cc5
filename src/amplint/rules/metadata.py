"""What a rule declares about itself, as plain data: code, name, summary, triggers, docs.

:class:`RuleInfo` answers the same questions as a :class:`amplint.rules.base.Rule` class
(``code``, ``default_enabled``, ``triggers``, ``documentation()``, ``url()``, ...) without the
rule's module having been imported, so that code which only needs metadata accepts either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from amplint.model import FixSafety, Severity

RULE_DOCS_URL = "https://github.com/amplint/amplint/blob/main/docs/rules/{code}.md"


def documentation_of(docstring: str | None) -> str:
    import textwrap  # only documentation needs it, not a lint run

    return textwrap.dedent(docstring or "").strip()


def section_of(documentation: str, title: str) -> str:
    """The text under ``## title`` in a rule's documentation."""
    parts = re.split(r"^## (.+)$", documentation, flags=re.MULTILINE)
    for heading, body in zip(parts[1::2], parts[2::2]):
        if heading.strip() == title:
            return body.strip()
    return ""


def python_block_of(section: str) -> str:
    match = re.search(r"```python\n(.*?)```", section, flags=re.DOTALL)
    return match.group(1) if match else ""


def url_of(code: str) -> str:
    return RULE_DOCS_URL.format(code=code)


@dataclass(frozen=True)
class RuleInfo:
    """A rule's metadata, read without importing its module."""

    code: str
    name: str
    summary: str
    module: str  # the rule's module, imported only to run the rule
    docstring: str = ""
    severity: Severity = Severity.ERROR
    fix_safety: FixSafety = FixSafety.NONE
    fix_withheld: str = ""  # when a finding gets no fix; empty: see fix_safety
    default_enabled: bool = True
    triggers: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()  # all of them occur in a file with a finding
    requires_match: str = ""  # a regular expression that matches every file with a finding
    focus_tokens: tuple[str, ...] = ()

    def documentation(self) -> str:
        return documentation_of(self.docstring)

    def doc_section(self, title: str) -> str:
        return section_of(self.documentation(), title)

    def doc_code_block(self, title: str) -> str:
        return python_block_of(self.doc_section(title))

    def url(self) -> str:
        return url_of(self.code)
