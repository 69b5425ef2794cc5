"""``--output-format sarif``: SARIF 2.1.0 as GitHub code scanning accepts it.

One run; ``tool.driver.rules`` lists every rule (plus AMP000 for syntax errors); each result
points at its rule by ``ruleId`` and ``ruleIndex`` and at the file by a URI relative to
``%SRCROOT%`` (the current directory, which is the repository root in CI). A file outside that
directory gets an absolute ``file:`` URI and no ``uriBaseId``: SARIF allows a base only under a
relative reference (the validator's SARIF1004). URIs are percent-encoded from the file name's
bytes, so any name gives a valid URI. A result whose fix this run would apply (safe, or unsafe
with ``--unsafe-fixes``) carries it in ``fixes``, as ruff's SARIF does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence
from urllib.parse import quote

import amplint
from amplint.model import Finding, Severity
from amplint.report.context import ReportContext, position_note
from amplint.report.escape import dumps

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/amplint/amplint"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _rule_descriptors() -> list[dict]:
    from amplint.report.ruledoc import SYNTAX_ERROR_DOC, all_rule_rows
    from amplint.rules.catalog import rule_catalog

    rules = rule_catalog()
    out = []
    for row in all_rule_rows():
        rule = rules.get(row["code"])
        if rule is None:
            what = "Reports a file that is not valid Python; nothing else in it can be checked."
            markdown = SYNTAX_ERROR_DOC
            level = "error"
            help_uri = None
        else:
            what = " ".join(rule.doc_section("What it does").split()) or rule.summary
            markdown = rule.documentation()
            level = LEVELS.get(rule.severity, "error")
            help_uri = rule.url()
        descriptor = {
            "id": row["code"],
            "name": row["name"],
            "shortDescription": {"text": row["summary"]},
            "fullDescription": {"text": what},
            "help": {"text": markdown, "markdown": markdown},
            "defaultConfiguration": {"level": level, "enabled": row["default"]},
            "properties": {"fix": row["fixable"]},
        }
        if help_uri:
            descriptor["helpUri"] = help_uri
        out.append(descriptor)
    return out


def _encoded(path: str) -> str:
    return quote(os.fsencode(Path(path).as_posix()), safe="/")


def artifact_location(filename: str, context: ReportContext) -> dict:
    """``{"uri", "uriBaseId"}`` for a file below the current directory, else an absolute ``uri``."""
    path = os.path.abspath(context.paths.get(filename, filename))
    try:
        relative = os.path.relpath(path)
    except ValueError:  # pragma: no cover - another drive on Windows
        relative = None
    if relative is not None and relative != ".." and not relative.startswith(".." + os.sep):
        return {"uri": _encoded(relative), "uriBaseId": "%SRCROOT%"}
    posix = Path(path).as_posix()
    return {"uri": "file://" + ("" if posix.startswith("/") else "/") + _encoded(posix)}


def _region(start, end) -> dict:
    return {"startLine": start.row, "startColumn": start.column, "endLine": end.row, "endColumn": end.column}


def _fix(finding: Finding, context: ReportContext) -> dict | None:
    """The finding's fix as SARIF's ``fix`` object, when this run would apply it.

    Not for a notebook: its edits are in cell rows, which are not rows of the file named.
    """
    if finding.fix is None or not finding.fix.edits or finding.cell is not None or not context.applicable(finding):
        return None
    return {
        "description": {"text": finding.fix.message},
        "artifactChanges": [
            {
                "artifactLocation": artifact_location(finding.filename, context),
                "replacements": [
                    {"deletedRegion": _region(edit.location, edit.end_location), "insertedContent": {"text": edit.content}}
                    for edit in finding.fix.edits
                ],
            }
        ],
        "properties": {"applicability": finding.fix.applicability},
    }


def build(findings: Sequence[Finding], context: ReportContext) -> dict:
    rules = _rule_descriptors()
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    results = []
    for finding in findings:
        start, end = context.file_span(finding)
        result = {
            "ruleId": finding.code,
            "level": LEVELS.get(finding.severity, "error"),
            "message": {"text": position_note(finding) + finding.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": artifact_location(finding.filename, context),
                        "region": _region(start, end),
                    }
                }
            ],
        }
        if finding.code in index:
            result["ruleIndex"] = index[finding.code]
        fix = _fix(finding, context)
        if fix is not None:
            result["fixes"] = [fix]
        results.append(result)
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "amplint",
                        "version": amplint.__version__,
                        "semanticVersion": amplint.__version__,
                        "informationUri": INFORMATION_URI,
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri().rstrip("/") + "/"}},
                "columnKind": "unicodeCodePoints",
                "invocations": [{"executionSuccessful": True}],
                "results": results,
            }
        ],
    }


def render(findings: Sequence[Finding], context: ReportContext) -> str:
    return dumps(build(findings, context), indent=2) + "\n"


def render_statistics(rows: Sequence[dict], context: ReportContext) -> str:
    import amplint.report.json as json_report

    return json_report.render_statistics(rows, context)
