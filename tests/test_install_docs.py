"""Documented install and pre-commit set-ups name only things that exist."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _tags() -> set[str]:
    run = subprocess.run(["git", "tag", "--list"], cwd=ROOT, capture_output=True, text=True)
    return set(run.stdout.split()) if run.returncode == 0 else set()


def test_precommit_revs_are_existing_tags_or_the_commit_placeholder():
    tags = _tags()
    for doc in DOCS:
        for rev in re.findall(r"^\s*rev:\s*(\S+)", doc.read_text(encoding="utf-8"), flags=re.MULTILINE):
            assert rev == "<commit-sha>" or rev in tags, f"{doc.name}: pre-commit rev {rev!r} is no tag of this repository"


def test_registry_install_is_only_offered_as_the_future():
    # amplint is not on PyPI yet: `pip install amplint` may only appear where the text says so.
    for doc in DOCS:
        if doc.name == "release.md":  # the page about publishing it
            continue
        for line in doc.read_text(encoding="utf-8").splitlines():
            if re.search(r"pip install ['\"]?amplint\b(?!\s*@)", line):
                assert "once released" in line or "Once amplint is released" in line, f"{doc.name}: {line.strip()}"


def test_readme_shows_checkout_and_wheel_installs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    install = readme.split("## Install\n", 1)[1].split("\n## ", 1)[0]
    assert "pip install .  " in install
    assert "pip wheel --no-deps -w dist ." in install
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), flags=re.MULTILINE)[1]
    assert f"dist/amplint-{version}-py3-none-any.whl" in install


def test_release_doc_version_places_agree():
    import amplint

    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), flags=re.MULTILINE)[1]
    assert amplint.__version__ == version
    assert (ROOT / "docs" / "release.md").is_file()
