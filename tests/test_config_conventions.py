"""ruff's configuration habits work here: file names and their order, the lint table, file-level noqa,
and a pasted docs example that loads as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from amplint.config import ConfigError, find_config, load_config, resolve_config
from amplint.engine import lint_text
from amplint.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
DEPRECATED_SCALER = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"


def _codes(text: str) -> list[str]:
    return [f.code for f in lint_text(text, "train.py", Settings(select=("ALL",)), edits=False).findings]


def test_dot_amplint_toml_wins_over_amplint_toml_which_wins_over_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.amplint]\nselect = ["AMP001"]\n')
    assert find_config(tmp_path).name == "pyproject.toml"
    (tmp_path / "amplint.toml").write_text('select = ["AMP002"]\n')
    assert find_config(tmp_path).name == "amplint.toml"
    (tmp_path / ".amplint.toml").write_text('select = ["AMP003"]\n')
    assert find_config(tmp_path).name == ".amplint.toml"
    assert resolve_config(None, tmp_path).select == ("AMP003",)


def test_the_lint_table_holds_the_rule_settings_and_wins_over_the_top_level(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.amplint]\nselect = ["AMP001"]\ntarget-torch = "2.3"\n'
        '[tool.amplint.lint]\nselect = ["AMP002"]\nignore = ["AMP003"]\n'
        '[tool.amplint.lint.per-file-ignores]\n"tests/*" = ["AMP013"]\n'
    )
    config = load_config(tmp_path / "pyproject.toml")
    assert config.select == ("AMP002",)
    assert config.ignore == ("AMP003",)
    assert config.per_file_ignores == (("tests/*", ("AMP013",)),)
    assert config.target_torch == (2, 3)
    (tmp_path / ".amplint.toml").write_text('[lint]\nextend-select = ["AMP100"]\n')
    assert load_config(tmp_path / ".amplint.toml").extend_select == ("AMP100",)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("pyproject.toml", '[tool.amplint.lint]\noutput-format = "json"\n',
         "pyproject.toml: [tool.amplint.lint] 'output-format' belongs in [tool.amplint], not in the lint table"),
        ("pyproject.toml", '[tool.amplint.lint]\nselct = ["AMP"]\n',
         "pyproject.toml: [tool.amplint.lint] unknown key 'selct' (did you mean 'select'?)"),
        ("pyproject.toml", '[tool.amplint.extension]\npyw = "python"\nproject-analysis = false\n',
         "pyproject.toml: [tool.amplint.extension] 'project-analysis' is a setting, not an extension: "
         "move it above the [tool.amplint.extension] header"),
        ("amplint.toml", '[extension]\npyw = "python"\nexclude = ["build"]\n',
         "amplint.toml: [extension] 'exclude' is a setting, not an extension: move it above the [extension] header"),
        (".amplint.toml", 'lint = 3\n', ".amplint.toml: [lint] must be a table"),
    ],
)
def test_a_misplaced_key_is_named_with_the_table_it_is_in(tmp_path, monkeypatch, name, text, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / name)
    assert str(caught.value) == message


def _toml_blocks(markdown: str) -> list[str]:
    return re.findall(r"```toml\n(.*?)```", markdown, flags=re.DOTALL)


def test_the_configuration_examples_in_the_docs_load_as_pasted(tmp_path):
    blocks = [b for b in _toml_blocks((ROOT / "docs" / "index.md").read_text()) if "[tool.amplint" in b]
    assert blocks
    for block in blocks:
        (tmp_path / "pyproject.toml").write_text(block)
        config = load_config(tmp_path / "pyproject.toml")
        assert config.exclude is None, "an example that replaces the default excludes would lint .venv/"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("# amplint: noqa\n", []),
        ("# amplint: noqa: AMP001\n", []),
        ("#amplint:noqa:amp001,AMP006\n", []),
        ("# amplint: noqa: AMP006\n", ["AMP001"]),
        ("# ruff: noqa\n", ["AMP001"]),
        ("# flake8: noqa\n", ["AMP001"]),
        ('"""# amplint: noqa"""\n', ["AMP001"]),  # a string, not a comment
        ("x = 1  # see the # amplint: noqa docs\n", ["AMP001"]),  # not at the comment's start
    ],
)
def test_a_file_level_directive_exempts_its_file_from_its_codes(header, expected):
    assert _codes(header + DEPRECATED_SCALER) == expected


def test_a_file_level_directive_neither_suppresses_a_syntax_error_nor_makes_row_directives_unused():
    # A GradScaler makes the file one the prefilter parses (a file with no rule's trigger is skipped).
    assert _codes("# amplint: noqa\nscaler = torch.amp.GradScaler()\ndef broken(:\n") == ["AMP000"]
    text = "# amplint: noqa: AMP001\n" + DEPRECATED_SCALER.replace("()\n", "()  # noqa: AMP001\n")
    assert _codes(text) == []  # AMP100 does not call the row's directive unused


def test_show_settings_shows_project_analysis_from_the_configuration(cli, files):
    files({"pyproject.toml": "[tool.amplint]\nproject-analysis = false\n", "a.py": "x = 1\n"})
    lines = cli("check", "--show-settings", "a.py").stdout.splitlines()
    assert "project-analysis = false" in lines
    assert "project-analysis = true" in cli("check", "--show-settings", "--isolated", "a.py").stdout.splitlines()
