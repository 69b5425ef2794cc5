"""Rule metadata and documentation as shown by ``amplint rules``/``amplint rule`` and in docs/."""

from __future__ import annotations

from amplint.model import FixSafety, Severity

from amplint.model import SYNTAX_ERROR_CODE
SYNTAX_ERROR_NAME = "syntax-error"
SYNTAX_ERROR_SUMMARY = "The file is not valid Python"
SYNTAX_ERROR_DOC = """## What it does
Reports a file that does not parse, at the parser's line and column.

## Why is this bad?
Nothing else in the file can be checked until it parses.

## Fix safety
There is no fix. A `# noqa` comment cannot suppress this finding."""

FIXABLE = {
    FixSafety.SAFE: "safe",
    FixSafety.UNSAFE: "unsafe",
    FixSafety.SOMETIMES: "sometimes",
    FixSafety.NONE: "no",
}

_FIX_KIND = {"safe": "safe", "unsafe": "unsafe: needs --unsafe-fixes", "sometimes": "safe when the rule can prove it, else unsafe"}


def fix_availability(fixable: str, withheld: str) -> str:
    """``always``, ``sometimes`` or ``never``: whether every finding of the rule comes with a fix."""
    if fixable == "no":
        return "never"
    return "always" if fixable in ("safe", "unsafe") and not withheld else "sometimes"


def fix_sentence(row: dict) -> str:
    """The rule page's sentence on its fix, e.g. ``Fix is sometimes available (safe; none when ...).``"""
    fixable, withheld = row["fixable"], row.get("fix_withheld", "")
    availability = fix_availability(fixable, withheld)
    if availability == "never":
        return "Fix is not available."
    kind = _FIX_KIND[fixable]
    return f"Fix is {availability} available ({kind}{'; none ' + withheld if withheld else ''})."


def fix_cell(row: dict) -> str:
    """The rules table's Fix column: ``safe``, ``unsafe``, ``sometimes (safe)``, ``sometimes (safe or unsafe)``, ``no``."""
    availability = fix_availability(row["fixable"], row.get("fix_withheld", ""))
    if availability == "never":
        return "no"
    kind = {"safe": "safe", "unsafe": "unsafe", "sometimes": "safe or unsafe"}[row["fixable"]]
    return kind if availability == "always" else f"sometimes ({kind})"


def all_rule_rows() -> list[dict]:
    """AMP000 and every registered rule, in code order."""
    from amplint.rules.catalog import rule_catalog

    rows = [
        {
            "code": SYNTAX_ERROR_CODE,
            "name": SYNTAX_ERROR_NAME,
            "summary": SYNTAX_ERROR_SUMMARY,
            "fixable": "no",
            "fix_availability": "never",
            "fix_withheld": "",
            "severity": Severity.ERROR.value,
            "default": True,
            "url": None,
        }
    ]
    for code, rule in rule_catalog().items():
        rows.append(
            {
                "code": code,
                "name": rule.name,
                "summary": rule.summary,
                "fixable": FIXABLE.get(rule.fix_safety, "no"),
                "fix_availability": fix_availability(FIXABLE.get(rule.fix_safety, "no"), rule.fix_withheld),
                "fix_withheld": rule.fix_withheld,
                "severity": rule.severity.value if isinstance(rule.severity, Severity) else str(rule.severity),
                "default": bool(rule.default_enabled),
                "url": rule.url(),
            }
        )
    return rows


def find_rule_row(code: str) -> dict | None:
    code = code.strip().upper()
    return next((row for row in all_rule_rows() if row["code"] == code), None)


def metadata_lines(row: dict) -> list[str]:
    default = "Enabled by default." if row["default"] else "Not enabled by default (select it with `--extend-select`)."
    return [
        f"Severity: {row['severity']}. {fix_sentence(row)} {default}",
    ]


def render_rule(code: str) -> str | None:
    """Markdown for one rule: ``# name (CODE)``, its metadata, then its documentation."""
    from amplint.rules.catalog import rule_catalog

    row = find_rule_row(code)
    if row is None:
        return None
    rule = rule_catalog().get(row["code"])
    body = SYNTAX_ERROR_DOC if rule is None else rule.documentation()
    parts = [f"# {row['name']} ({row['code']})", "", *metadata_lines(row), "", body.strip(), ""]
    return "\n".join(parts)


def rules_table_markdown(link: str | None = "docs/rules/{code}.md") -> str:
    lines = [
        "| Code | Name | Summary | Fix | Severity | Default |",
        "|---|---|---|---|---|---|",
    ]
    for row in all_rule_rows():
        code = row["code"]
        cell = f"[{code}]({link.format(code=code)})" if link else code
        summary = row["summary"].replace("|", "\\|")
        lines.append(
            f"| {cell} | {row['name']} | {summary} | {fix_cell(row)} | {row['severity']} | {'on' if row['default'] else 'off'} |"
        )
    return "\n".join(lines) + "\n"
