"""``--output-format junit``: JUnit XML, one test suite per file and one failing test case per finding.

Shaped like ``ruff --output-format junit`` within the Jenkins JUnit schema (which has no line or
column attribute: the position leads the failure text). A file that could not be checked is an
``<error>`` test case, so a CI test report never shows it as passed.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from itertools import groupby
from typing import Sequence

from amplint.model import Finding
from amplint.report.context import ReportContext
from amplint.report.escape import terminal

PACKAGE = "org.amplint"
# XML 1.0 has no way to write these at all, not even as character references.
_NOT_XML = re.compile("[\ufffe\uffff]")


def xml_text(value: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", terminal(value))


def _classname(name: str) -> str:
    stem = name[:-3] if name.endswith(".py") else name
    parts = [part for part in stem.replace("\\", "/").split("/") if part not in ("", ".", "..")]
    return ".".join(parts) or stem


def _suite(parent: ET.Element, name: str, tests: int, failures: int, errors: int) -> ET.Element:
    return ET.SubElement(
        parent, "testsuite", name=xml_text(name), tests=str(tests), disabled="0", errors=str(errors),
        failures=str(failures), package=PACKAGE,
    )


def build(findings: Sequence[Finding], context: ReportContext) -> ET.Element:
    unchecked = [(r.filename, e.message) for r in context.results for e in r.errors]
    total = len(findings) + len(unchecked)
    root = ET.Element("testsuites", name="amplint", tests=str(max(total, 1)), failures=str(len(findings)),
                      errors=str(len(unchecked)))
    for filename, items in groupby(findings, key=lambda finding: finding.filename):
        items = list(items)
        name = context.display_name(filename)
        suite = _suite(root, name, len(items), len(items), 0)
        for finding in items:
            case = ET.SubElement(suite, "testcase", name=f"{PACKAGE}.{finding.code}", classname=xml_text(_classname(name)))
            failure = ET.SubElement(case, "failure", message=xml_text(finding.message), type=finding.code)
            cell = f"cell {finding.cell}, " if finding.cell is not None else ""
            failure.text = xml_text(f"{cell}line {finding.location.row}, col {finding.location.column}, {finding.message}")
    for filename, message in unchecked:
        name = context.display_name(filename)
        suite = _suite(root, name, 1, 0, 1)
        case = ET.SubElement(suite, "testcase", name=f"{PACKAGE}.unchecked", classname=xml_text(_classname(name)))
        ET.SubElement(case, "error", message=xml_text(message), type="unchecked")
    if total == 0:
        # A report with no test at all reads as "no tests ran" in most CI services.
        suite = _suite(root, "amplint", 1, 0, 0)
        ET.SubElement(suite, "testcase", name=PACKAGE, classname="amplint")
    return root


def render(findings: Sequence[Finding], context: ReportContext) -> str:
    root = build(findings, context)
    ET.indent(root, space="    ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
