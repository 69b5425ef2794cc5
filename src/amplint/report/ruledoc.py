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

_FIX_SENTENCE = {
    "safe": "Fix is always available (safe).",
    "unsafe": "Fix is always available (unsafe: needs --unsafe-fixes).",
    "sometimes": "Fix is sometimes available (safe, when the rule can prove it).",
    "no": "Fix is not available.",
}


def all_rule_rows() -> list[dict]:
    """AMP000 and every registered rule, in code order."""
    from amplint.rules.catalog import rule_catalog

    rows = [
        {
            "code": SYNTAX_ERROR_CODE,
            "name": SYNTAX_ERROR_NAME,
            "summary": SYNTAX_ERROR_SUMMARY,
            "fixable": "no",
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
        f"Severity: {row['severity']}. {_FIX_SENTENCE[row['fixable']]} {default}",
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
            f"| {cell} | {row['name']} | {summary} | {row['fixable']} | {row['severity']} | {'on' if row['default'] else 'off'} |"
        )
    return "\n".join(lines) + "\n"
