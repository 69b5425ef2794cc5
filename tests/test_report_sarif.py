"""SARIF against the official SARIF 2.1.0 schema (as the SARIF Multitool ships it), and the
artifact locations of files inside and outside the current directory."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote

import jsonschema
import pytest

SCHEMA = json.loads((Path(__file__).resolve().parent / "schemas" / "sarif-2.1.0.json").read_text(encoding="utf-8"))
DEPRECATED = "import torch\nwith torch.cuda.amp.autocast():\n    pass\n"


def validate(document: dict) -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    validator.validate(document)
    # SARIF1004 (the SARIF validator's rule, beyond what a JSON schema can say): a uriBaseId
    # may only stand beside a relative reference that does not start with a slash.
    for run in document["runs"]:
        for result in run["results"]:
            for location in result["locations"]:
                artifact = location["physicalLocation"]["artifactLocation"]
                if "uriBaseId" in artifact:
                    assert ":" not in artifact["uri"].split("/")[0] and not artifact["uri"].startswith("/"), artifact
                else:
                    assert artifact["uri"].startswith("file:///"), artifact


def sarif(cli, *args) -> dict:
    run = cli("check", *args, "--no-cache", "--output-format", "sarif")
    assert run.exit_code == 1, run
    document = json.loads(run.stdout)
    validate(document)
    return document


def uris(document: dict) -> list[dict]:
    return [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in document["runs"][0]["results"]]


def test_schema_is_the_official_one_and_catches_errors():
    assert SCHEMA["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    with pytest.raises(jsonschema.ValidationError):
        validate({"version": "2.1.0", "runs": [{"tool": {"driver": {}}}]})  # driver.name is required


def test_files_below_the_working_directory_are_relative_to_srcroot(cli, files, tmp_path):
    files({"pkg/a b.py": DEPRECATED})
    document = sarif(cli, "pkg")
    assert uris(document) == [{"uri": "pkg/a%20b.py", "uriBaseId": "%SRCROOT%"}]
    assert document["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"


def test_files_outside_the_working_directory_get_absolute_uris_without_base(cli, files, tmp_path, monkeypatch):
    files({"project/fixtures/t.py": DEPRECATED, "elsewhere/.keep": ""})
    monkeypatch.chdir(tmp_path / "elsewhere")
    document = sarif(cli, "../project/fixtures")
    (artifact,) = uris(document)
    assert artifact == {"uri": (tmp_path / "project" / "fixtures" / "t.py").as_uri()}


def test_a_sibling_whose_name_starts_with_dots_is_still_inside(cli, files, tmp_path):
    files({"..data/t.py": DEPRECATED})
    assert uris(sarif(cli, "..data")) == [{"uri": "..data/t.py", "uriBaseId": "%SRCROOT%"}]


def test_every_character_of_a_name_survives_percent_encoding(cli, files, tmp_path):
    name = "we#ird ?%name[1].py"
    files({name: DEPRECATED})
    (artifact,) = uris(sarif(cli, name))
    assert unquote(artifact["uri"]) == name and "#" not in artifact["uri"] and "?" not in artifact["uri"]


def _apply(text: str, replacements: list[dict]) -> str:
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(row: int, column: int) -> int:
        return offsets[row - 1] + column - 1

    for replacement in sorted(replacements, key=lambda r: (r["deletedRegion"]["startLine"], r["deletedRegion"]["startColumn"]), reverse=True):
        region = replacement["deletedRegion"]
        start, end = offset(region["startLine"], region["startColumn"]), offset(region["endLine"], region["endColumn"])
        text = text[:start] + replacement["insertedContent"]["text"] + text[end:]
    return text


UNSAFE_AND_SAFE = (
    "import torch\n"
    "scaler = torch.cuda.amp.GradScaler()\n"
    "model = torch.nn.Linear(4, 4).cuda().half()\n"
    "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "with torch.autocast('cuda', dtype=torch.float16):\n"
    "    loss = model(torch.randn(2, 4, device='cuda')).sum()\n"
    "scaler.scale(loss).backward()\n"
    "scaler.step(optimizer)\n"
    "scaler.update()\n"
)


def test_a_fix_this_run_would_apply_is_in_fixes_and_applying_it_gives_what_fix_writes(cli, files, tmp_path):
    files({"train.py": UNSAFE_AND_SAFE})
    document = sarif(cli, "train.py")
    results = document["runs"][0]["results"]
    with_fixes = [r for r in results if "fixes" in r]
    assert [r["ruleId"] for r in with_fixes] == ["AMP001"]
    assert "AMP005" in {r["ruleId"] for r in results}, "the unsafe half() finding is reported, without a fix"
    (fix,) = with_fixes[0]["fixes"]
    assert fix["properties"] == {"applicability": "safe"}
    (change,) = fix["artifactChanges"]
    assert change["artifactLocation"] == {"uri": "train.py", "uriBaseId": "%SRCROOT%"}
    patched = _apply(UNSAFE_AND_SAFE, change["replacements"])
    assert cli("check", "train.py", "--no-cache", "--fix", "--select", "AMP001").exit_code == 0
    assert patched == (tmp_path / "train.py").read_text()


def test_unsafe_fixes_are_in_fixes_only_with_unsafe_fixes(cli, files):
    files({"train.py": UNSAFE_AND_SAFE})
    safe_only = {r["ruleId"] for r in sarif(cli, "train.py")["runs"][0]["results"] if "fixes" in r}
    with_unsafe = sarif(cli, "train.py", "--unsafe-fixes")["runs"][0]["results"]
    applicabilities = {r["ruleId"]: r["fixes"][0]["properties"]["applicability"] for r in with_unsafe if "fixes" in r}
    assert safe_only == {"AMP001"}
    assert applicabilities == {"AMP001": "safe", "AMP005": "unsafe"}
