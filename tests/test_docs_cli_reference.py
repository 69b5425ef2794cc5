"""docs/index.md documents every option of `amplint check`, every command and every configuration key."""

from __future__ import annotations

import re
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
GUIDE = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")


def _documented_options() -> set[str]:
    table = [line for line in GUIDE.splitlines() if line.startswith("| `-")]
    return {flag for line in table for flag in re.findall(r"`(-[-\w]+)", line.split("|")[1])}


def test_every_check_option_is_in_the_option_table():
    from amplint.cli.group import check_command

    documented = _documented_options()
    missing = []
    for param in check_command.params:
        if isinstance(param, click.Option) and not param.hidden:
            names = [name for name in (*param.opts, *param.secondary_opts) if name not in ("-h", "--help")]
            if not any(name in documented or name.replace("--no-", "--") in documented for name in names):
                missing.append(names[0])
    assert missing == [], f"options missing from docs/index.md's option table: {missing}"


def test_every_command_is_shown():
    from amplint.cli.main import main_group

    for name in main_group.list_commands(click.Context(main_group)):
        assert f"amplint {name}" in GUIDE, name


def test_every_configuration_key_is_in_the_example():
    from amplint.config import KEYS

    example = GUIDE.split("## Configuration", 1)[1].split("```toml", 1)[1].split("```", 1)[0]
    for key in KEYS:
        # A key may be shown commented out (exclude, which would drop the default excludes).
        pattern = rf"^(?:(?:# )?{re.escape(key)} =|\[tool\.amplint(?:\.lint)?\.{re.escape(key)}\])"
        assert re.search(pattern, example, re.MULTILINE), key


def test_pre_commit_section_names_the_file_types_the_hooks_take():
    import yaml

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    section = GUIDE.split("## pre-commit", 1)[1].split("\n## ", 1)[0]
    suffixes = {"python": "`.py`", "pyi": "`.pyi`", "jupyter": "`.ipynb`"}
    for hook in hooks:
        for kind in hook["types_or"]:
            assert suffixes[kind] in section, (hook["id"], kind)
