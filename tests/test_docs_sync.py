"""docs/rules/, docs/rules/index.md and the README's rules table match the rules' source."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "gen_docs.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def test_generated_docs_are_up_to_date():
    proc = run("--check")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "docs are up to date\n"


def test_every_rule_has_a_page_matching_amplint_rule(cli):
    from amplint.rules import all_rules

    for code in ["AMP000", *all_rules()]:
        page = (ROOT / "docs" / "rules" / f"{code}.md").read_text(encoding="utf-8")
        shown = cli("rule", code).stdout
        assert page.split("\n", 2)[2] == shown, code  # the page is `amplint rule CODE` plus a header comment


def test_every_rule_documents_every_section():
    from amplint.rules import all_rules
    from amplint.rules.base import DOC_SECTIONS

    for code, rule in all_rules().items():
        missing = [title for title in DOC_SECTIONS if not rule.doc_section(title)]
        assert missing == [], f"{code} lacks {missing}"


def _copy_project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "docs").mkdir(parents=True)
    shutil.copytree(ROOT / "docs" / "rules", root / "docs" / "rules")
    shutil.copy(ROOT / "README.md", root / "README.md")
    shutil.copy(ROOT / "mkdocs.yml", root / "mkdocs.yml")
    return root


def test_check_detects_stale_readme_page_and_orphan(tmp_path):
    root = _copy_project(tmp_path)
    assert run("--root", str(root)).returncode == 0  # in sync first, whatever the checkout's state
    readme = root / "README.md"
    good_readme = readme.read_text()
    readme.write_text(good_readme.replace("deprecated-amp-api", "renamed", 1))
    page = root / "docs" / "rules" / "AMP001.md"
    page.write_text(page.read_text() + "hand edit\n")
    (root / "docs" / "rules" / "AMP777.md").write_text("old rule\n")
    mkdocs = root / "mkdocs.yml"
    good_mkdocs = mkdocs.read_text()
    assert '      - "AMP003 clip-before-unscale": rules/AMP003.md\n' in good_mkdocs  # the navigation names each rule
    mkdocs.write_text(good_mkdocs.replace('      - "AMP003 clip-before-unscale": rules/AMP003.md\n', "", 1))
    proc = run("--check", "--root", str(root))
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[1:] == [
        "  docs/rules/AMP001.md", "  README.md", "  mkdocs.yml", "  docs/rules/AMP777.md (no such rule)",
    ]
    # Regenerating fixes everything, and a second check passes.
    assert run("--root", str(root)).returncode == 0
    assert not (root / "docs" / "rules" / "AMP777.md").exists()
    assert run("--check", "--root", str(root)).returncode == 0
    assert readme.read_text() == good_readme
    assert mkdocs.read_text() == good_mkdocs


def test_readme_without_markers_is_an_error(tmp_path):
    root = _copy_project(tmp_path)
    (root / "README.md").write_text("# no table\n")
    proc = run("--check", "--root", str(root))
    assert proc.returncode == 1
    assert "markers" in proc.stderr
