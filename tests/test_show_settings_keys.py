"""``--show-settings`` prints a line for every key a configuration file may set, so a new key
cannot be left out of it (``extend-ignore`` is shown merged into ``ignore``, as ruff does)."""

from __future__ import annotations

from amplint.config import KEYS

# Keys the printout shows under another key, and where.
MERGED = {"extend-ignore": "ignore"}


def test_every_configuration_key_has_a_show_settings_line(cli, tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n", encoding="utf-8")
    shown = {line.split(" = ", 1)[0] for line in cli("check", "--show-settings", "--isolated", str(tmp_path / "a.py")).stdout.splitlines() if " = " in line}
    assert {MERGED.get(key, key) for key in KEYS} <= shown
