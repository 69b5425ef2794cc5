"""verify's --json and --plot never land on the script or a file its arguments name, and --plot's
suffix is one matplotlib writes: each refused in one line, exit 2, before any run."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from verify_helpers import run_cli, tiny_script

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow


def _refused(proc, message: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""  # no run was announced, let alone started
    assert proc.stderr == f"amplint verify: {message}\n"


@pytest.mark.parametrize("option", ["--json", "--plot"])
def test_output_onto_the_script_is_refused(tmp_path, option):
    script = tiny_script(tmp_path)
    before = script.read_bytes()
    proc = run_cli("verify", "train.py", option, "train.py", cwd=tmp_path, timeout=120)
    _refused(proc, f"{option} train.py is also an input; refusing to overwrite it")
    assert script.read_bytes() == before


@pytest.mark.parametrize("link", ["symlink", "hardlink", "dot-slash"])
def test_another_name_of_the_script_is_refused(tmp_path, link):
    script = tiny_script(tmp_path)
    before = script.read_bytes()
    if link == "dot-slash":
        name = "./train.py"
    else:
        name = "other.py"
        (os.symlink if link == "symlink" else os.link)(script, tmp_path / name)
    proc = run_cli("verify", "train.py", "--json", name, cwd=tmp_path, timeout=120)
    _refused(proc, f"--json {name} is also an input (train.py); refusing to overwrite it")
    assert script.read_bytes() == before


@pytest.mark.parametrize("script_args", [["data.txt"], ["--data=data.txt"], ["--data", "./data.txt"]])
def test_output_onto_a_file_in_the_script_arguments_is_refused(tmp_path, script_args):
    tiny_script(tmp_path)
    (tmp_path / "data.txt").write_text("1 2 3\n")
    proc = run_cli("verify", "train.py", "--json", "data.txt", "--", *script_args, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("amplint verify: --json data.txt is also an input")
    assert (tmp_path / "data.txt").read_text() == "1 2 3\n"


def test_json_and_plot_on_one_file_is_refused(tmp_path):
    tiny_script(tmp_path)
    proc = run_cli("verify", "train.py", "--json", "r.out", "--plot", "./r.out", cwd=tmp_path, timeout=120)
    _refused(proc, "--plot ./r.out is also the --json path; refusing to write both to one file")


def test_plot_suffix_matplotlib_cannot_write_is_refused_before_the_runs(tmp_path):
    pytest.importorskip("matplotlib")
    tiny_script(tmp_path)
    proc = run_cli("verify", "train.py", "--plot", "curves.txt", cwd=tmp_path, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("amplint verify: cannot write --plot curves.txt: matplotlib cannot write .txt files; "
                                  "use one of ")
    assert "png" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert not (tmp_path / "curves.txt").exists()


def test_plot_format_comes_from_the_suffix():
    pytest.importorskip("matplotlib")
    from amplint.runtime.plot import plot_format

    assert [plot_format(p) for p in ("out", "out.PNG", "dir.d/curves.pdf", ".hidden")] == ["png", "png", "pdf", "png"]
    with pytest.raises(ValueError, match=r"cannot write \.py files"):
        plot_format("train.py")


def test_known_formats_are_all_ones_matplotlib_writes():
    pytest.importorskip("matplotlib")
    from matplotlib.backend_bases import FigureCanvasBase

    from amplint.runtime.plot import KNOWN_FORMATS

    assert set(KNOWN_FORMATS) <= set(FigureCanvasBase.get_supported_filetypes())


def test_a_plot_path_without_suffix_is_written_where_given(tmp_path):
    pytest.importorskip("matplotlib")
    from amplint.runtime.plot import write_plot

    steps = [SimpleNamespace(index=i, loss=1.0 / (i + 1), applied=True, scale_before=2.0**16, scale_after=2.0**16)
             for i in range(5)]
    result = SimpleNamespace(target="train.py", exit_code=0, amp=SimpleNamespace(steps=steps), reference=None)
    write_plot(result, str(tmp_path / "curves"))
    assert (tmp_path / "curves").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (tmp_path / "curves.png").exists()  # matplotlib alone would have added the suffix
