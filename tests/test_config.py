"""Configuration files: discovery, precedence, validation messages, CLI overrides."""

from __future__ import annotations

import json

import pytest

from amplint.config import Config, ConfigError, find_config, load_config, resolve_config

BAD = "bad_call(1)\nrisky(2)\nnote_me()\n"


def codes(run) -> list[str]:
    return [item["code"] for item in json.loads(run.stdout)]


# --------------------------------------------------------------------------- finding the file


def test_nearest_pyproject_upward(files, tmp_path):
    files({"pyproject.toml": "[tool.amplint]\nignore = []\n", "pkg/sub/a.py": ""})
    assert find_config(tmp_path / "pkg" / "sub" / "a.py") == tmp_path / "pyproject.toml"
    assert find_config(tmp_path / "pkg" / "sub") == tmp_path / "pyproject.toml"


def test_pyproject_without_table_is_skipped(files, tmp_path):
    files({"pyproject.toml": "[tool.amplint]\n", "pkg/pyproject.toml": "[project]\nname='x'\n", "pkg/a.py": ""})
    assert find_config(tmp_path / "pkg" / "a.py") == tmp_path / "pyproject.toml"


def test_amplint_toml_wins_in_the_same_directory(files, tmp_path):
    files({"pyproject.toml": "[tool.amplint]\nselect = ['AMP001']\n", "amplint.toml": "ignore = ['AMP001']\n"})
    assert find_config(tmp_path) == tmp_path / "amplint.toml"
    assert load_config(tmp_path / "amplint.toml").ignore == ("AMP001",)


def test_nearer_file_wins(files, tmp_path):
    files({"amplint.toml": "ignore = ['AMP001']\n", "pkg/pyproject.toml": "[tool.amplint]\nselect = ['AMP001']\n"})
    assert find_config(tmp_path / "pkg") == tmp_path / "pkg" / "pyproject.toml"


def test_no_config_gives_defaults(tmp_path):
    config = resolve_config(None, tmp_path)
    assert config.path is None or config.path.parent != tmp_path  # nothing in tmp_path itself
    assert Config().select is None and Config().exclude is None


def test_all_keys_parsed(files, tmp_path):
    files({"pyproject.toml": (
        "[tool.amplint]\n"
        "select = ['amp0']\nignore = ['AMP002']\nextend-select = ['AMP001']\n"
        "exclude = ['gen']\nextend-exclude = ['old/']\ntarget-torch = '2.10'\n"
        "[tool.amplint.per-file-ignores]\n'tests/*' = ['AMP001']\n"
    )})
    config = load_config(tmp_path / "pyproject.toml")
    assert config.select == ("AMP0",)
    assert config.ignore == ("AMP002",) and config.extend_select == ("AMP001",)
    assert config.exclude == ("gen",) and config.extend_exclude == ("old/",)
    assert config.target_torch == (2, 10)
    assert config.per_file_ignores == (("tests/*", ("AMP001",)),)
    assert config.root == tmp_path.resolve()


# --------------------------------------------------------------------------- one-line errors


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("pyproject.toml", "[tool.amplint]\nselct = ['AMP001']\n",
         "pyproject.toml: [tool.amplint] unknown key 'selct' (did you mean 'select'?)"),
        ("amplint.toml", "per_file_ignores = {}\n",
         "amplint.toml: unknown key 'per_file_ignores' (did you mean 'per-file-ignores'?)"),
        ("amplint.toml", "colour = 'red'\n", "amplint.toml: unknown key 'colour'"),
        ("pyproject.toml", "[tool.amplint]\nselect = 'AMP001'\n",
         "pyproject.toml: [tool.amplint] 'select' must be a list of strings, e.g. [\"AMP001\"]"),
        ("pyproject.toml", "[tool.amplint]\nignore = ['AMP9x']\n",
         "pyproject.toml: [tool.amplint] 'ignore': unknown rule selector 'AMP9X'"),
        ("pyproject.toml", "[tool.amplint]\ntarget-torch = 2.10\n",
         "pyproject.toml: [tool.amplint] 'target-torch' must be a string such as \"2.4\" (a float would read 2.10 as 2.1)"),
        ("pyproject.toml", "[tool.amplint]\ntarget-torch = 'new'\n",
         "pyproject.toml: [tool.amplint] 'target-torch': invalid torch version 'new' (expected e.g. 2.4)"),
        ("pyproject.toml", "[tool.amplint]\nper-file-ignores = ['x']\n",
         "pyproject.toml: [tool.amplint] 'per-file-ignores' must be a table of glob = [codes]"),
        ("pyproject.toml", "[tool.amplint.per-file-ignores]\n'a/*' = ['NOPE']\n",
         "pyproject.toml: [tool.amplint] 'per-file-ignores' \"a/*\": unknown rule selector 'NOPE'"),
        ("pyproject.toml", "[tool]\namplint = 3\n", "pyproject.toml: [tool.amplint] must be a table"),
        ("pyproject.toml", "[tool.amplint\nselect = []\n",
         "pyproject.toml: invalid TOML: Expected ']' at the end of a table declaration (at line 1, column 14)"),
    ],
)
def test_bad_config_is_one_line_exit_2(cli, files, name, content, message):
    files({name: content, "a.py": "x = 1\n"})
    run = cli("a.py")
    assert run.exit_code == 2
    assert run.stderr == f"amplint: error: {message}\n"
    assert run.stdout == ""


def test_config_error_names_a_file_in_a_parent_directory(cli, files, tmp_path, monkeypatch):
    files({"amplint.toml": "bogus = 1\n", "pkg/a.py": ""})
    monkeypatch.chdir(tmp_path / "pkg")
    from click.testing import CliRunner

    from amplint.cli.main import main_group

    result = CliRunner().invoke(main_group, ["a.py"])
    assert result.exit_code == 2
    assert result.stderr == f"amplint: error: {tmp_path / 'amplint.toml'}: unknown key 'bogus'\n"


def test_explicit_config_missing(cli):
    run = cli("--config", "nope.toml", ".")
    assert (run.exit_code, run.stderr) == (2, "amplint: error: nope.toml: configuration file not found\n")


def test_load_config_raises_config_error_not_traceback(tmp_path):
    (tmp_path / "amplint.toml").write_bytes(b"select = ['\xff']\n")
    with pytest.raises(ConfigError, match=r"amplint.toml: not valid UTF-8 at byte 11"):
        load_config(tmp_path / "amplint.toml")


# --------------------------------------------------------------------------- effects and overrides


def test_config_selection_applies(cli, files, fake_rules):
    files({"pyproject.toml": "[tool.amplint]\nignore = ['AMP992']\n", "a.py": BAD})
    assert codes(cli("a.py", "--output-format", "json")) == ["AMP991", "AMP993"]


def test_cli_select_overrides_config_select(cli, files, fake_rules):
    files({"amplint.toml": "select = ['AMP991']\nextend-select = ['AMP993']\n", "a.py": BAD})
    assert codes(cli("a.py", "--output-format", "json")) == ["AMP991", "AMP993"]
    assert codes(cli("a.py", "--output-format", "json", "--select", "AMP992")) == ["AMP992"]


def test_cli_ignore_adds_to_config_ignore(cli, files, fake_rules):
    files({"amplint.toml": "ignore = ['AMP991']\n", "a.py": BAD})
    assert codes(cli("a.py", "--output-format", "json", "--ignore", "AMP993")) == ["AMP992"]


def test_explicit_config_flag(cli, files, fake_rules):
    files({"conf/other.toml": "ignore = ['AMP991', 'AMP992']\n", "a.py": BAD})
    assert codes(cli("a.py", "--output-format", "json", "--config", "conf/other.toml")) == ["AMP993"]


def test_per_file_ignores_relative_to_config_dir(cli, files, fake_rules, tmp_path, monkeypatch):
    files({
        "proj/pyproject.toml": "[tool.amplint.per-file-ignores]\n'legacy/*' = ['AMP991']\n'*.pyi' = ['AMP99']\n",
        "proj/legacy/a.py": "bad_call()\n",
        "proj/new/a.py": "bad_call()\n",
        "proj/new/a.pyi": "bad_call()\n",
    })
    # Run from outside the project: the glob is still anchored at proj/.
    run = cli("proj", "--output-format", "concise")
    assert run.report == "proj/new/a.py:1:1: AMP991 [*] `bad_call` is not allowed\n"
    monkeypatch.chdir(tmp_path / "proj" / "legacy")
    from click.testing import CliRunner

    from amplint.cli.main import main_group

    result = CliRunner().invoke(main_group, ["a.py", "--output-format", "concise"])
    assert (result.exit_code, result.stdout) == (0, "All checks passed!\n")


def test_config_target_torch_and_cli_override(cli, files):
    files({"amplint.toml": "target-torch = '2.2'\n", "a.py": "import torch\ns = torch.cuda.amp.GradScaler()\n"})
    (finding,) = json.loads(cli("a.py", "--output-format", "json").stdout)
    assert finding["fix"] is None
    (finding,) = json.loads(cli("a.py", "--output-format", "json", "--target-torch", "2.6").stdout)
    assert finding["fix"] is not None


def test_config_exclude(cli, files, fake_rules):
    files({"amplint.toml": "extend-exclude = ['generated/']\n", "generated/a.py": "bad_call()\n",
           "src/b.py": "bad_call()\n", "build/c.py": "bad_call()\n"})
    run = cli(".", "--output-format", "concise")
    assert run.report == "src/b.py:1:1: AMP991 [*] `bad_call` is not allowed\n"
    files({"amplint.toml": "exclude = ['generated/']\n"})  # replaces the defaults: build/ is linted
    run = cli(".", "--output-format", "concise")
    assert [line.split(":")[0] for line in run.report.splitlines()] == ["build/c.py", "src/b.py"]
