"""scripts/docs_screenshot.sh in headless Chromium (Debian's chromium; .ci/run installs it): a rule
page, the verify page and the configuration section render to pictures with content, and the
build behind them prints no banner of the theme's."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from editor_tools import missing

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ("rules-AMP003.png", "verify.png", "index-configuration.png")


def _content_share(png: Path) -> tuple[int, float]:
    """The picture's number of colours and the share of pixels not in its commonest colour."""
    from PIL import Image

    with Image.open(png) as image:
        pixels = image.convert("RGB")
        counts = pixels.getcolors(maxcolors=pixels.width * pixels.height)
    total = sum(count for count, _ in counts)
    return len(counts), 1 - max(count for count, _ in counts) / total


def test_content_share_tells_a_blank_picture_from_a_page(tmp_path):
    from PIL import Image, ImageDraw

    blank = tmp_path / "blank.png"
    Image.new("RGB", (200, 100), "white").save(blank)
    assert _content_share(blank) == (1, 0.0)
    page = tmp_path / "page.png"
    image = Image.new("RGB", (200, 100), "white")
    ImageDraw.Draw(image).rectangle((0, 0, 199, 30), fill=(63, 81, 181))
    image.save(page)
    assert _content_share(page)[1] > 0.25


def test_screenshots_of_rule_verify_and_config_pages_have_content(tmp_path):
    if shutil.which("chromium") is None:
        missing("chromium is not installed (apt-get install chromium; .ci/run installs it)")
    out = tmp_path / "shots"
    proc = subprocess.run(["bash", "scripts/docs_screenshot.sh", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "end of life" not in proc.stdout + proc.stderr
    for name in SHOTS:
        png = out / name
        assert png.stat().st_size > 20_000, name
        colours, share = _content_share(png)
        # A blank capture (what Chromium shoots for an address with a #fragment) is one colour.
        assert colours > 50 and share > 0.1, (name, colours, share)
