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
