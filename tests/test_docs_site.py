"""The MkDocs site: every page under docs/ is in mkdocs.yml's nav (CI builds it with --strict)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _nav_pages(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [page for item in node for page in _nav_pages(item)]
    if isinstance(node, dict):
        return [page for value in node.values() for page in _nav_pages(value)]
    return []


def test_nav_lists_every_page_once():
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    pages = _nav_pages(config["nav"])
    assert len(pages) == len(set(pages))
    on_disk = sorted(path.relative_to(ROOT / "docs").as_posix() for path in (ROOT / "docs").rglob("*.md"))
    assert sorted(pages) == on_disk


def test_every_rule_page_is_in_the_nav():
    import yaml

    from amplint.report.ruledoc import all_rule_rows

    pages = _nav_pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"])
    assert [f"rules/{row['code']}.md" for row in all_rule_rows()] == [p for p in pages if p.startswith("rules/AMP")]


def test_strict_build_passes(tmp_path):
    """What .ci/run runs; here too, so a broken link shows up in the test run."""
    import os
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "end of life" not in proc.stdout + proc.stderr
    page = (tmp_path / "site" / "rules" / "AMP003" / "index.html").read_text(encoding="utf-8")
    # The navigation names each rule ("AMP003 clip-before-unscale"), not its bare code.
    from amplint.report.ruledoc import all_rule_rows

    labels = re.findall(r'<span class="md-ellipsis">\s*(AMP\d{3}[^<]*?)\s*</span>', page)
    assert labels and set(labels) == {f"{row['code']} {row['name']}" for row in all_rule_rows()}
