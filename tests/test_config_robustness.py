"""Hostile configuration: every problem is one line naming the file (and key), exit 2, no hang.

Unreadable files are made unreadable for real: the run happens in a forked child that has
dropped root to ``nobody`` (see as_nobody.py), because root reads any file.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from amplint.config import ConfigError, load_config
from amplint.settings import SelectionError, Settings, parse_torch_version
from as_nobody import as_nobody


def assert_one_line_error(run, message: str) -> None:
    assert run.exit_code == 2, run
    assert run.stderr == f"amplint: error: {message}\n"
    assert run.stdout == ""


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("select = ['']\n", "amplint.toml: 'select': empty rule selector \"\" (it would select nothing)"),
        ("select = ['  ']\n", "amplint.toml: 'select': empty rule selector \"\" (it would select nothing)"),
        ("ignore = ['']\n", "amplint.toml: 'ignore': empty rule selector \"\" (it would select nothing)"),
        ("target-torch = '-1.-5'\n", "amplint.toml: 'target-torch': invalid torch version '-1.-5' (expected e.g. 2.4)"),
        ("target-torch = '2.x'\n", "amplint.toml: 'target-torch': invalid torch version '2.x' (expected e.g. 2.4)"),
        ("target-torch = '2..4'\n", "amplint.toml: 'target-torch': invalid torch version '2..4' (expected e.g. 2.4)"),
        ("select = ['AMP001']\nignore = ['AMP001']\n", "amplint.toml: 'AMP001' is both selected and ignored"),
        ("extend-select = ['AMP011']\nignore = ['AMP011']\n", "amplint.toml: 'AMP011' is both selected and ignored"),
        ("select = ['AMP001']\nignore = ['AMP0']\n", "amplint.toml: 'ignore' removes every rule that 'select' enables"),
        ("exclude = ['[z-a]']\n", "amplint.toml: 'exclude': invalid pattern '[z-a]': bad character range z-a"),
        ("extend-exclude = ['ok/', 'gen[']\n",
         "amplint.toml: 'extend-exclude': invalid pattern 'gen[': unclosed '[' (write '\\[' for a literal bracket)"),
        ("exclude = [1]\n", "amplint.toml: 'exclude' must be a list of strings"),
        ("select = [['AMP001']]\n", "amplint.toml: 'select' must be a list of strings"),
        ("per-file-ignores = {'a.py' = 'AMP001'}\n",
         "amplint.toml: 'per-file-ignores' \"a.py\" must be a list of strings, e.g. [\"AMP001\"]"),
        ("per-file-ignores = {'a.py' = ['']}\n",
         "amplint.toml: 'per-file-ignores' \"a.py\": empty rule selector \"\" (it would select nothing)"),
        ("select = ['AMP001'\n",
         "amplint.toml: invalid TOML: Unclosed array (at end of document)"),
        ("select = ['AMP001']\nselect = ['AMP002']\n",
         "amplint.toml: invalid TOML: Cannot overwrite a value (at line 2, column 20)"),
        ("[select]\n", "amplint.toml: 'select' must be a list of strings"),
        ("ignore = ['AMP0001']\n", "amplint.toml: 'ignore': unknown rule selector 'AMP0001'"),
    ],
)
def test_bad_amplint_toml(cli, files, content, message):
    files({"amplint.toml": content, "a.py": "x = 1\n"})
    assert_one_line_error(cli("a.py"), message)


def test_bad_key_in_pyproject_names_the_table(cli, files):
    files({"pyproject.toml": "[tool.amplint]\nselect = ['']\n", "a.py": ""})
    assert_one_line_error(
        cli("a.py"), "pyproject.toml: [tool.amplint] 'select': empty rule selector \"\" (it would select nothing)"
    )


def test_empty_selector_from_the_python_api_is_rejected():
    with pytest.raises(SelectionError, match="empty rule selector"):
        Settings(select=("",)).validate()


@pytest.mark.parametrize(("text", "version"), [("2.4", (2, 4)), ("2", (2, 0)), ("2.10.1", (2, 10)), (" 2.6 ", (2, 6))])
def test_good_torch_versions(text, version):
    assert parse_torch_version(text) == version


@pytest.mark.parametrize("text", ["-1.-5", "-2.4", "2.-1", "", ".", "2.4.1.7", "v2.4", "2,4", "2.4a"])
def test_bad_torch_versions(text):
    with pytest.raises(SelectionError):
        parse_torch_version(text)


def test_target_torch_option_is_checked_too(cli, files):
    files({"a.py": ""})
    assert_one_line_error(cli("a.py", "--target-torch=-1.-5"), "--target-torch: invalid torch version '-1.-5' (expected e.g. 2.4)")


# --------------------------------------------------------------------------- files that are not files


def test_config_option_naming_a_fifo_does_not_hang(files, tmp_path):
    files({"a.py": ""})
    os.mkfifo(tmp_path / "conf.toml")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "amplint", "check", "a.py", "--config", "conf.toml"],
            cwd=tmp_path, capture_output=True, timeout=30,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("--config on a FIFO hangs")
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, b"", b"amplint: error: conf.toml: not a regular file\n")


def test_config_option_naming_dev_zero(cli, files):
    files({"a.py": ""})
    assert_one_line_error(cli("a.py", "--config", "/dev/zero"), "/dev/zero: not a regular file")


def test_config_file_too_large(cli, files, tmp_path):
    files({"a.py": ""})
    (tmp_path / "big.toml").write_bytes(b"# " + b"x" * (2 * 1024 * 1024) + b"\n")
    assert_one_line_error(cli("a.py", "--config", "big.toml"), "big.toml: too large for a configuration file (over 1024 KiB)")


def test_pyproject_that_is_a_directory_is_reported(cli, files, tmp_path):
    files({"a.py": "", "pyproject.toml/readme": ""})
    assert_one_line_error(cli("a.py"), "pyproject.toml: is a directory, not a configuration file")


def test_amplint_toml_that_is_a_fifo_is_reported(cli, files, tmp_path):
    files({"a.py": ""})
    os.mkfifo(tmp_path / "amplint.toml")
    assert_one_line_error(cli("a.py"), "amplint.toml: not a regular file")


def test_load_config_on_a_fifo_raises_config_error(tmp_path):
    fifo = tmp_path / "amplint.toml"
    os.mkfifo(fifo)
    outcome: list[BaseException | None] = []

    def load() -> None:
        try:
            load_config(fifo)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - inspected below
            outcome.append(exc)

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(timeout=20)
    if reader.is_alive():
        with open(fifo, "wb"):  # unblock the reader so the test process can end
            pass
        pytest.fail("load_config blocks on a FIFO")
    assert isinstance(outcome[0], ConfigError) and "not a regular file" in str(outcome[0])


def _check_in(directory: str):
    from click.testing import CliRunner

    from amplint.cli.main import main_group

    before = os.getcwd()
    os.chdir(directory)
    try:
        result = CliRunner().invoke(main_group, ["a.py", "--no-cache"])
    finally:
        os.chdir(before)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("name", ["pyproject.toml", "amplint.toml"])
def test_unreadable_config_file_is_reported(name):
    directory = Path(tempfile.mkdtemp(prefix="amplint-config-"))
    try:
        directory.chmod(0o755)
        (directory / "a.py").write_text("x = 1\n")
        config = directory / name
        config.write_text("[tool.amplint]\n" if name == "pyproject.toml" else "")
        _check_in(str(directory))  # import what a run needs while still root
        config.chmod(0o000)
        code, stdout, stderr = as_nobody(_check_in, str(directory))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    assert (code, stdout) == (2, "")
    assert stderr == f"amplint: error: {name}: cannot read (Permission denied)\n"
