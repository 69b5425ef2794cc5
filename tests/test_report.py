"""Reporters on hand-made findings: exact text, escaping, SARIF as GitHub code scanning takes it."""

from __future__ import annotations

import json

import jsonschema
import pytest

from amplint.model import Edit, FileResult, Finding, FixInfo, Location, Severity
from amplint.report import FORMATS, ReportContext, canonical_format, get_reporter, statistics


def finding(code="AMP001", row=1, col=1, end_row=None, end_col=None, message="msg", filename="a.py",
            severity=Severity.ERROR, fix=None, no_fix_reason=None) -> Finding:
    return Finding(code, message, filename, Location(row, col), Location(end_row or row, end_col or col + 1),
                   severity, fix, no_fix_reason, row)


SAFE = FixInfo("safe", "Do it", [Edit("x", Location(1, 1), Location(1, 2))])


def context(source: str | None = None, **kwargs) -> ReportContext:
    return ReportContext([FileResult("a.py", source=source)], **kwargs)


# --------------------------------------------------------------------------- registry


def test_get_reporter_names_and_alias():
    assert FORMATS == ("full", "concise", "grouped", "json", "json-lines", "junit", "github", "gitlab", "pylint",
                       "azure", "sarif", "rdjson")
    assert canonical_format("text") == "full"
    with pytest.raises(ValueError, match="unknown output format 'xml'"):
        get_reporter("xml")
    for name in FORMATS:
        assert get_reporter(name).name == name


# --------------------------------------------------------------------------- full / concise


def test_full_multiline_span_carets_to_end_of_first_line():
    src = "x = call(\n    1,\n)\n"
    out = get_reporter("full").render([finding(row=1, col=5, end_row=3, end_col=2, fix=SAFE)], context(src))
    assert out == (
        "a.py:1:5: AMP001 [*] msg\n"
        "  |\n"
        "1 | x = call(\n"
        "  |     ^^^^^ AMP001\n"
        "  |\n"
        "  = help: Do it\n"
    )


def test_full_wide_gutter_control_chars_and_form_feed_lines():
    src = "\n" * 9 + "a\x0cb\n" + "y = '\x1b' + zz\n"  # \f must not count as a line break
    out = get_reporter("full").render([finding(row=11, col=13, end_col=15)], context(src))
    assert out == (
        "a.py:11:13: AMP001 msg\n"
        "   |\n"
        "11 | y = '\u241b' + zz\n"
        "   |             ^^ AMP001\n"
        "   |\n"
    )


def test_full_without_source_still_prints_headline_and_hint():
    out = get_reporter("full").render([finding(no_fix_reason="why not")], context(None))
    assert out == "a.py:1:1: AMP001 msg\n  = note: why not\n"


def test_concise_marks_only_applicable_fixes():
    unsafe = FixInfo("unsafe", "Risky", [])
    items = [finding(fix=SAFE), finding(row=2, fix=unsafe)]
    assert get_reporter("concise").render(items, context()) == "a.py:1:1: AMP001 [*] msg\na.py:2:1: AMP001 msg\n"
    out = get_reporter("concise").render(items, context(unsafe_fixes=True))
    assert out == "a.py:1:1: AMP001 [*] msg\na.py:2:1: AMP001 [*] msg\n"


def test_statistics_rows():
    items = [finding(fix=SAFE), finding(row=2), finding(code="AMP000")]
    rows = statistics(items, context())
    assert [(r["code"], r["count"], r["fixable"], r["name"]) for r in rows] == [
        ("AMP001", 2, True, "deprecated-amp-api"),
        ("AMP000", 1, False, "syntax-error"),
    ]
    assert get_reporter("concise").render_statistics(rows, context()) == (
        "2\tAMP001\t[*] deprecated-amp-api\n1\tAMP000\t[ ] syntax-error\n"
    )


# --------------------------------------------------------------------------- github


def test_github_escaping_and_levels():
    items = [
        finding(message="50% of\r\nlines, a:b", filename="we,ird:name%.py"),
        finding(code="AMP000", row=2, severity=Severity.WARNING),
        finding(row=3, severity=Severity.INFO),
    ]
    assert get_reporter("github").render(items, context()) == (
        "::error file=we%2Cird%3Aname%25.py,line=1,col=1,endLine=1,endColumn=2,"
        "title=AMP001 (deprecated-amp-api)::50%25 of%0D%0Alines, a:b\n"
        "::warning file=a.py,line=2,col=1,endLine=2,endColumn=2,title=AMP000 (syntax-error)::msg\n"
        "::notice file=a.py,line=3,col=1,endLine=3,endColumn=2,title=AMP001 (deprecated-amp-api)::msg\n"
    )


# --------------------------------------------------------------------------- json


def test_json_keys_in_ruff_order_and_absolute_filename():
    ctx = context(paths={"a.py": "/abs/a.py"})
    (item,) = json.loads(get_reporter("json").render([finding(fix=SAFE)], ctx))
    assert list(item) == [
        "code", "name", "message", "filename", "location", "end_location", "fix", "url", "severity", "noqa_row", "cell"
    ]
    assert item["filename"] == "/abs/a.py"
    assert item["fix"] == {
        "applicability": "safe",
        "message": "Do it",
        "edits": [{"content": "x", "location": {"row": 1, "column": 1}, "end_location": {"row": 1, "column": 2}}],
    }
    (syntax,) = json.loads(get_reporter("json").render([finding(code="AMP000")], ctx))
    assert syntax["url"] is None and syntax["fix"] is None
    assert syntax["name"] == "syntax-error"


# --------------------------------------------------------------------------- sarif

# What GitHub code scanning requires of an upload (docs: "SARIF support for code scanning"),
# written as a JSON schema: version 2.1.0, runs[].tool.driver.name, results with ruleId,
# message.text and physical locations with a relative URI and a region with startLine.
GITHUB_SARIF = {
    "type": "object",
    "required": ["version", "runs", "$schema"],
    "properties": {
        "version": {"const": "2.1.0"},
        "runs": {
            "type": "array",
            "minItems": 1,
            "maxItems": 1,
            "items": {
                "type": "object",
                "required": ["tool", "results"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name", "version", "informationUri", "rules"],
                                "properties": {
                                    "name": {"const": "amplint"},
                                    "informationUri": {"type": "string", "pattern": "^https://"},
                                    "rules": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": ["id", "name", "shortDescription", "fullDescription",
                                                         "help", "defaultConfiguration"],
                                            "properties": {
                                                "id": {"type": "string", "pattern": "^AMP[0-9]{3}$"},
                                                "shortDescription": {"type": "object", "required": ["text"]},
                                                "fullDescription": {"type": "object", "required": ["text"]},
                                                "help": {"type": "object", "required": ["text", "markdown"]},
                                                "helpUri": {"type": "string", "pattern": "^https://"},
                                                "defaultConfiguration": {
                                                    "type": "object",
                                                    "properties": {"level": {"enum": ["none", "note", "warning", "error"]}},
                                                },
                                            },
                                        },
                                    },
                                },
                            }
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["ruleId", "ruleIndex", "level", "message", "locations"],
                            "properties": {
                                "level": {"enum": ["none", "note", "warning", "error"]},
                                "message": {"type": "object", "required": ["text"]},
                                "locations": {
                                    "type": "array",
                                    "minItems": 1,
                                    "items": {
                                        "type": "object",
                                        "required": ["physicalLocation"],
                                        "properties": {
                                            "physicalLocation": {
                                                "type": "object",
                                                "required": ["artifactLocation", "region"],
                                                "properties": {
                                                    "artifactLocation": {
                                                        "type": "object",
                                                        "required": ["uri", "uriBaseId"],
                                                        "properties": {
                                                            "uri": {"type": "string", "pattern": "^[^/]"},
                                                            "uriBaseId": {"const": "%SRCROOT%"},
                                                        },
                                                    },
                                                    "region": {
                                                        "type": "object",
                                                        "required": ["startLine", "startColumn", "endLine", "endColumn"],
                                                        "properties": {
                                                            "startLine": {"type": "integer", "minimum": 1},
                                                            "startColumn": {"type": "integer", "minimum": 1},
                                                        },
                                                    },
                                                },
                                            }
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


def test_sarif_shape(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ctx = context(paths={"a.py": str(tmp_path / "sub" / "a.py")})
    items = [finding(fix=SAFE, row=3, col=2, end_col=9), finding(code="AMP000", severity=Severity.ERROR),
             finding(row=4, severity=Severity.INFO)]
    sarif = json.loads(get_reporter("sarif").render(items, ctx))
    jsonschema.validate(sarif, GITHUB_SARIF)
    run = sarif["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    from amplint.rules import all_rules

    assert [r["id"] for r in rules] == ["AMP000", *all_rules()]
    amp001 = rules[1]
    assert amp001["name"] == "deprecated-amp-api"
    assert amp001["help"]["markdown"] == all_rules()["AMP001"].documentation()
    assert amp001["helpUri"] == all_rules()["AMP001"].url()
    assert amp001["defaultConfiguration"]["level"] == "error"
    first, syntax, info = run["results"]
    assert rules[first["ruleIndex"]]["id"] == "AMP001" and rules[syntax["ruleIndex"]]["id"] == "AMP000"
    assert first["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "sub/a.py", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 3, "startColumn": 2, "endLine": 3, "endColumn": 9},
    }
    assert info["level"] == "note"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"
    assert sarif["version"] == "2.1.0" and sarif["$schema"].endswith("sarif-2.1.0.json")


def test_sarif_empty_run_is_valid(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sarif = json.loads(get_reporter("sarif").render([], context()))
    jsonschema.validate(sarif, GITHUB_SARIF)
    assert sarif["runs"][0]["results"] == []


# --------------------------------------------------------------------------- diff


def test_diff_writer():
    from amplint.report.diff import render_diffs

    changed = FileResult("a.py", source="b\n", original_source="a\n")
    unchanged = FileResult("c.py", source="x\n")
    assert render_diffs([changed, unchanged]) == "--- a.py\n+++ a.py\n@@ -1 +1 @@\n-a\n+b\n"
