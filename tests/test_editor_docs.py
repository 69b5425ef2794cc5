"""The editor recipes in docs/integrations.md are the files the editor tests run (so a fix to
one reaches the other), and every setting the VS Code extension declares is documented."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "integrations.md").read_text(encoding="utf-8")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", DOC, re.M | re.S)


def test_neovim_recipe_in_the_docs_is_the_tested_file():
    assert (ROOT / "editors" / "neovim" / "amplint.lua").read_text(encoding="utf-8") in _blocks("lua")


def test_emacs_recipe_in_the_docs_is_the_tested_file():
    assert (ROOT / "editors" / "emacs" / "amplint-eglot.el").read_text(encoding="utf-8") in _blocks("elisp")


def test_every_vscode_setting_is_documented_with_its_default():
    manifest = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text(encoding="utf-8"))
    properties = manifest["contributes"]["configuration"]["properties"]
    assert properties
    rows = dict(re.findall(r"^\| `(amplint\.[A-Za-z]+)` \| `([^`]*)` \|", DOC, re.M))
    assert rows == {key: json.dumps(spec["default"]) for key, spec in properties.items()}
    extension_readme = (ROOT / "editors" / "vscode" / "README.md").read_text(encoding="utf-8")
    assert all(f"`{key}`" in extension_readme for key in properties)


def test_vscode_lockfile_matches_the_manifest():
    """`npm ci` in CI installs from package-lock.json: it must be the lockfile of this manifest."""
    manifest = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text(encoding="utf-8"))
    lock = json.loads((ROOT / "editors" / "vscode" / "package-lock.json").read_text(encoding="utf-8"))
    root = lock["packages"][""]
    assert root.get("dependencies", {}) == manifest["dependencies"]
    assert root.get("devDependencies", {}) == manifest["devDependencies"]
