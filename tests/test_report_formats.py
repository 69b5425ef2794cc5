"""The CI formats shaped like ruff's: exact output on hand-made findings, and schema validation
of JUnit (Jenkins' XSD) and GitLab Code Quality (GitLab's own entry schema) output."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from amplint.model import Edit, FileError, FileResult, Finding, FixInfo, Location, Severity
from amplint.report import ReportContext, get_reporter

SCHEMAS = Path(__file__).resolve().parent / "schemas"
SAFE = FixInfo("safe", "Do it", [Edit("good", Location(2, 5), Location(2, 8))])


def finding(code="AMP001", row=1, col=1, end_row=None, end_col=None, message="msg", filename="a.py",
            severity=Severity.ERROR, fix=None) -> Finding:
    return Finding(code, message, filename, Location(row, col), Location(end_row or row, end_col or col + 1),
                   severity, fix, None, row)


def context(sources: dict[str, str] | None = None, errors: dict[str, str] | None = None, **kwargs) -> ReportContext:
    results = [FileResult(name, source=text) for name, text in (sources or {"a.py": None}).items()]
    results += [FileResult(name, errors=[FileError(name, message)]) for name, message in (errors or {}).items()]
    return ReportContext(results, **kwargs)


def render(output_format: str, findings, ctx=None) -> str:
    return get_reporter(output_format).render(findings, ctx or context())


TWO_FILES = [
    finding(row=1, col=8, message="first"),
    finding(code="AMP003", row=12, col=5, message="second", fix=SAFE),
    finding(code="AMP011", row=3, col=1, filename="pkg/b.py", severity=Severity.INFO, message="third"),
]


# --------------------------------------------------------------------------- line formats


def test_grouped_aligns_positions_per_file_and_marks_fixable():
    assert render("grouped", TWO_FILES) == (
        "a.py:\n"
        "   1:8 AMP001 first\n"
        "  12:5 AMP003 [*] second\n"
        "\n"
        "pkg/b.py:\n"
        "  3:1 AMP011 third\n"
    )


def test_grouped_of_nothing_is_empty():
    assert render("grouped", []) == ""


def test_pylint_lines():
    assert render("pylint", TWO_FILES) == (
        "a.py:1: [AMP001] first\n"
        "a.py:12: [AMP003] second\n"
        "pkg/b.py:3: [AMP011] third\n"
    )


def test_azure_logissue_lines_and_escaping():
    out = render("azure", [*TWO_FILES, finding(message="50% done\r\nnext", filename="we;ird].py", severity=Severity.WARNING)])
    assert out == (
        "##vso[task.logissue type=error;sourcepath=a.py;linenumber=1;columnnumber=8;code=AMP001;]first\n"
        "##vso[task.logissue type=error;sourcepath=a.py;linenumber=12;columnnumber=5;code=AMP003;]second\n"
        "##vso[task.logissue type=warning;sourcepath=pkg/b.py;linenumber=3;columnnumber=1;code=AMP011;]third\n"
        "##vso[task.logissue type=warning;sourcepath=we%3Bird%5D.py;linenumber=1;columnnumber=1;code=AMP001;]"
        "50%AZP25 done%0D%0Anext\n"
    )


def test_json_lines_is_one_json_finding_per_line():
    ctx = context(paths={"a.py": "/abs/a.py"})
    lines = render("json-lines", TWO_FILES, ctx).splitlines()
    assert len(lines) == 3
    full = json.loads(get_reporter("json").render(TWO_FILES, ctx))
    assert [json.loads(line) for line in lines] == full
    assert render("json-lines", [], ctx) == ""


# --------------------------------------------------------------------------- junit


def _junit_schema():
    import xmlschema

    return xmlschema.XMLSchema(str(SCHEMAS / "jenkins-junit.xsd"))


def test_junit_suites_per_file_and_validates():
    out = render("junit", TWO_FILES)
    _junit_schema().validate(out)
    assert out == (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<testsuites name="amplint" tests="3" failures="3" errors="0">\n'
        '    <testsuite name="a.py" tests="2" disabled="0" errors="0" failures="2" package="org.amplint">\n'
        '        <testcase name="org.amplint.AMP001" classname="a">\n'
        '            <failure message="first" type="AMP001">line 1, col 8, first</failure>\n'
        "        </testcase>\n"
        '        <testcase name="org.amplint.AMP003" classname="a">\n'
        '            <failure message="second" type="AMP003">line 12, col 5, second</failure>\n'
        "        </testcase>\n"
        "    </testsuite>\n"
        '    <testsuite name="pkg/b.py" tests="1" disabled="0" errors="0" failures="1" package="org.amplint">\n'
        '        <testcase name="org.amplint.AMP011" classname="pkg.b">\n'
        '            <failure message="third" type="AMP011">line 3, col 1, third</failure>\n'
        "        </testcase>\n"
        "    </testsuite>\n"
        "</testsuites>\n"
    )


def test_junit_clean_run_is_one_passing_test():
    out = render("junit", [])
    _junit_schema().validate(out)
    assert '<testsuites name="amplint" tests="1" failures="0" errors="0">' in out
    assert '<testcase name="org.amplint" classname="amplint" />' in out


def test_junit_unchecked_file_is_an_error_not_a_pass():
    out = render("junit", [], context(errors={"bad.py": "bad.py: not valid UTF-8"}))
    _junit_schema().validate(out)
    assert '<testsuites name="amplint" tests="1" failures="0" errors="1">' in out
    assert '<error message="bad.py: not valid UTF-8" type="unchecked" />' in out
    assert 'classname="amplint"' not in out


def test_junit_escapes_markup_and_characters_xml_cannot_hold():
    out = render("junit", [finding(message='<b>&"x"</b>\x1b\x00\ufffe', filename="a&<b>.py")])
    _junit_schema().validate(out)
    assert 'message="&lt;b&gt;&amp;&quot;x&quot;&lt;/b&gt;\u241b\u2400\\ufffe"' in out
    assert 'name="a&amp;&lt;b&gt;.py"' in out


def test_junit_schema_rejects_what_it_should():
    # The vendored schema is strict enough to catch a malformed report.
    import xmlschema

    with pytest.raises(xmlschema.XMLSchemaValidationError):
        _junit_schema().validate('<testsuites><testsuite tests="1"><testcase/></testsuite></testsuites>')


# --------------------------------------------------------------------------- gitlab


def _gitlab_schema() -> dict:
    return json.loads((SCHEMAS / "gitlab-codeclimate.json").read_text(encoding="utf-8"))


def _validate_gitlab(text: str) -> list:
    report = json.loads(text)
    assert isinstance(report, list)  # the report is an array of entries
    for entry in report:
        jsonschema.validate(entry, _gitlab_schema())
    return report


def test_gitlab_entries_validate_and_carry_what_the_widget_shows():
    ctx = context({"a.py": "x\n" * 11 + "    torch.nn.utils.clip_grad_norm_(p, 1)\n", "pkg/b.py": "a\nb\nc\n"})
    report = _validate_gitlab(render("gitlab", TWO_FILES, ctx))
    first, second, third = report
    assert second == {
        "type": "issue",
        "check_name": "AMP003",
        "description": "AMP003 (clip-before-unscale): second",
        "categories": ["Bug Risk"],
        "severity": "major",
        "fingerprint": second["fingerprint"],
        "location": {"path": "a.py", "positions": {"begin": {"line": 12, "column": 5}, "end": {"line": 12, "column": 6}}},
    }
    assert third["severity"] == "info" and third["location"]["path"] == "pkg/b.py"
    assert len({entry["fingerprint"] for entry in report}) == 3
    assert all(len(entry["fingerprint"]) == 32 for entry in report)


def test_gitlab_fingerprints_survive_moved_lines_and_tell_repeats_apart():
    before = {"a.py": "import torch\nscaler.step(opt)\nscaler.step(opt)\n"}
    after = {"a.py": "import torch\n\n\n# moved down\nscaler.step(opt)\nscaler.step(opt)\n"}
    old = _validate_gitlab(render("gitlab", [finding(row=2), finding(row=3)], context(before)))
    new = _validate_gitlab(render("gitlab", [finding(row=5), finding(row=6)], context(after)))
    assert [e["fingerprint"] for e in old] == [e["fingerprint"] for e in new]
    assert old[0]["fingerprint"] != old[1]["fingerprint"]
    changed = _validate_gitlab(render("gitlab", [finding(row=2)], context({"a.py": "x\nscaler.step(other)\n"})))
    assert changed[0]["fingerprint"] != old[0]["fingerprint"]


def test_gitlab_paths_relative_to_ci_project_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("CI_PROJECT_DIR", str(tmp_path))
    ctx = context(paths={"a.py": str(tmp_path / "src" / "a.py")})
    (entry,) = _validate_gitlab(render("gitlab", [finding()], ctx))
    assert entry["location"]["path"] == "src/a.py"


def test_gitlab_schema_rejects_an_entry_without_fingerprint():
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"description": "x", "severity": "major", "location": {}}, _gitlab_schema())


# --------------------------------------------------------------------------- rdjson


def test_rdjson_diagnostics_with_byte_columns_and_suggestions():
    src = {"a.py": "x\n\u00e9\u00e9\u00e9 bad_call()\n"}  # three 2-byte characters before column 5
    fixable = finding(code="AMP003", row=2, col=5, end_col=8, message="second", fix=SAFE)
    report = json.loads(render("rdjson", [fixable, finding(row=1, severity=Severity.WARNING)], context(src)))
    assert report["source"] == {"name": "amplint", "url": "https://github.com/amplint/amplint"}
    first, second = report["diagnostics"]
    assert first == {
        "message": "second",
        "location": {"path": "a.py", "range": {"start": {"line": 2, "column": 8}, "end": {"line": 2, "column": 11}}},
        "severity": "ERROR",
        "code": {"value": "AMP003", "url": first["code"]["url"]},
        "suggestions": [{"range": {"start": {"line": 2, "column": 8}, "end": {"line": 2, "column": 11}}, "text": "good"}],
    }
    assert first["code"]["url"].endswith("AMP003.md")
    assert second["severity"] == "WARNING" and "suggestions" not in second
