"""What the report tells besides the criteria: warnings, notes, the plot's title, and the
script's output kept apart from the progress bar."""

from __future__ import annotations

import os

import pytest

from verify_helpers import TRAINING, run_cli, run_verify, tiny_script

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow


def test_no_autocast_and_no_scaler_is_a_warning(tmp_path):
    from amplint.runtime.report import format_text

    script = tiny_script(tmp_path, steps=20)
    script.write_text(script.read_text().replace('torch.amp.GradScaler("cpu")', 'torch.amp.GradScaler("cpu", enabled=False)')
                      .replace('dtype=torch.float16', 'dtype=torch.float16, enabled=False'))
    result = run_verify(script, args=[], steps=20)
    assert any("no enabled autocast region or GradScaler was seen" in w for w in result.warnings)
    assert "warning: no enabled autocast region or GradScaler was seen" in format_text(result)
    assert result.to_dict()["warnings"] == result.warnings


def test_amp_script_has_no_such_warning_and_states_the_cpu_float16_cost():
    result = run_verify(TRAINING / "correct.py")
    assert result.warnings == []
    [note] = [n for n in result.notes if "float16" in n]
    assert "x the FP32 reference's time per step" in note and "say nothing about a GPU" in note


def test_checkpoints_are_redirected_and_the_directory_removed(tmp_path, monkeypatch):
    import tempfile

    own_tmp = tmp_path / "tmp"
    own_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(own_tmp))
    work = tmp_path / "work"
    work.mkdir()
    (work / "keep.pt").write_bytes(b"the user's own checkpoint")
    script = tiny_script(work, steps=4, after=(
        "torch.save({'model': model.state_dict(), 'optimizer': opt.state_dict(), 'scaler': scaler.state_dict()},"
        " 'keep.pt')\n"
        "torch.save(model.state_dict(), 'new.pt')\n"
        "assert set(torch.load('new.pt')) == {'weight', 'bias'}  # read back from where it went\n"
    ))
    monkeypatch.chdir(work)
    result = run_verify(script, args=[], steps=10)
    assert result.exit_code in (0, 3), result.message
    assert (work / "keep.pt").read_bytes() == b"the user's own checkpoint"
    assert not (work / "new.pt").exists()
    assert any("the script wrote 2 file(s) per run" in n for n in result.notes)
    # torch's own compile cache (torchinductor_<user>) may be created under the temp folder the
    # first time this process imports it; what amplint made there must be gone.
    assert [name for name in os.listdir(own_tmp) if not name.startswith("torchinductor_")] == []


def test_plot_title_uses_the_verdict_words():
    from types import SimpleNamespace

    from amplint.runtime.plot import plot_title
    from amplint.runtime.report import verdict_line

    for code, word in [(0, "TRAINS"), (1, "FAILED"), (2, "ERROR"), (3, "INCONCLUSIVE")]:
        result = SimpleNamespace(target="t.py", exit_code=code, checks=[], findings=[], ranks=[], message="m")
        assert plot_title(result).endswith(f": {word}")
        assert verdict_line(result).startswith(f"verdict: {word} ")


def test_script_output_lines_are_written_between_redraws_of_the_bar(capsys):
    from amplint.runtime.progress import ProgressBoard

    board = ProgressBoard({"amp": 10}, enabled=True)
    board.step("amp", 3, 1.5)
    board.write_line("stdout", b"step 3 loss 1.5\n")
    board.close()
    out, err = capsys.readouterr()
    assert out == "step 3 loss 1.5\n"
    bar = "amp   [######--------------] 3/10 loss 1.5"
    # drawn, cleared before the script's line, drawn again after it
    assert err == f"\r{bar}   \r\033[K\r{bar}   \n"


@pytest.mark.slow
def test_nproc_without_a_process_group_is_a_warning(tmp_path):
    script = tiny_script(tmp_path, steps=3)
    proc = run_cli("verify", "--nproc-per-node", "2", script, "--device", "cpu", "--steps", "3",
                   "--baseline", "none", cwd=tmp_path)
    assert "warning: --nproc-per-node 2 was asked for, but the script never initialised a process group" in proc.stdout, (
        proc.stdout + proc.stderr[-2000:])
