"""verify never changes the user's files: every way a script saves, moves or deletes a checkpoint
is redirected into verify's own directory (and the script sees its own changes), and a write
verify cannot redirect is refused and reported, exit 2.

Each test runs a real verify of a small CPU loop that does its checkpointing at step 3, in a
project folder outside the temporary folder (scratch space, whose writes are real), and compares
every byte, mode and mtime of that folder before and after.
"""

from __future__ import annotations

import os
import stat
import textwrap

import pytest

from verify_helpers import run_cli

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

LOOP = """
import glob, io, os, pathlib, shutil, sys
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = torch.amp.GradScaler("cpu")
x, y = torch.randn(16, 4), torch.randn(16, 1)
{before}
for step in range(1000):
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.float16):
        loss = (model(x) - y).pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    if step == 3:
        sd = {{"model": model.state_dict(), "tag": "run"}}
{checkpoint}
"""


def write_script(project, checkpoint: str, before: str = "") -> str:
    script = project / "train.py"
    script.write_text(LOOP.format(before=textwrap.dedent(before),
                                  checkpoint=textwrap.indent(textwrap.dedent(checkpoint), " " * 8)))
    return str(script)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project with checkpoints of the user's own in ck/, and a temporary folder apart from it."""
    import tempfile

    import torch

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # this process (in-process runs)
    monkeypatch.setenv("TMPDIR", str(scratch))  # verify's worker and torchrun's ranks
    ck = tmp_path / "project" / "ck"
    (ck / "old").mkdir(parents=True)
    torch.manual_seed(1)
    torch.save({"model": torch.nn.Linear(4, 1).state_dict(), "tag": "user"}, ck / "resume.pt")
    (ck / "last.pt").write_bytes(b"the user's last checkpoint")
    (ck / "last.pt.tmp").write_bytes(b"a stale temporary file from a crashed run")
    (ck / "best.pth").write_bytes(b"the user's best checkpoint")
    (ck / "old" / "epoch1.pth").write_bytes(b"an old checkpoint")
    monkeypatch.chdir(ck.parent)
    yield ck.parent
    # what verify made in the temporary folder is gone (torch's compile cache and torchrun's
    # error-file folder are torch's own)
    assert [n for n in os.listdir(scratch) if not n.startswith(("torchinductor_", "torchelastic_"))] == []


def snapshot(root) -> dict:
    """Every entry's mode, mtime and bytes (folders: mode and mtime, which change with the listing)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in ["", *dirnames, *filenames]:
            path = os.path.join(dirpath, name) if name else dirpath
            st = os.lstat(path)
            data = None if stat.S_ISDIR(st.st_mode) else open(path, "rb").read()
            out.setdefault(os.path.relpath(path, root), (st.st_mode, st.st_mtime_ns, data))
    return out


def test_torch_and_file_object_saves_in_process_leave_the_project_untouched(project):
    import builtins
    import io
    import sys

    import torch

    script = write_script(project, before="""
        state = torch.load("ck/resume.pt")  # resume from the user's checkpoint: read where it is
        assert state["tag"] == "user", "resume: the user's checkpoint must load as it is"
        model.load_state_dict(state["model"])
    """, checkpoint="""
        torch.serialization.save(sd, "ck/ser.pt")
        with open("ck/fileobj.pt", "wb") as f:  # Lightning-like: a file object of the script's
            torch.save(sd, f)
        pathlib.Path("ck/last.pt").write_bytes(b"written by the run")
        os.makedirs("ck/run-1", exist_ok=True)  # HF-like: a new folder per save
        torch.save(sd, os.path.join("ck", "run-1", "pytorch_model.bin"))
        import fsspec
        fs = fsspec.filesystem("file")
        fs.makedirs("ck/lightning", exist_ok=True)
        with fs.open("ck/lightning/epoch=0.ckpt", "wb") as f:
            torch.save(sd, f)
        for name in ("ck/ser.pt", "ck/fileobj.pt", "ck/run-1/pytorch_model.bin", "ck/lightning/epoch=0.ckpt"):
            assert torch.load(name)["tag"] == "run", name + ": saved in the run, it must load back"
        assert pathlib.Path("ck/last.pt").read_bytes() == b"written by the run", "Path.write_bytes then read"
        assert os.path.isdir("ck/run-1") and sorted(os.listdir("ck/run-1")) == ["pytorch_model.bin"]
        assert fs.exists("ck/lightning/epoch=0.ckpt")
    """)
    before = snapshot(project)
    originals = (torch.save, torch.load, builtins.open, os.replace, os.stat, sys.dont_write_bytecode)
    from verify_helpers import run_verify

    result = run_verify(script, args=[], steps=10)
    assert result.exit_code == 0, (result.message, [c.to_dict() for c in result.checks])
    assert snapshot(project) == before
    assert any("the script wrote 5 file(s) per run" in n for n in result.notes), result.notes
    # every patch is undone once the script has run
    assert (torch.save, torch.load, builtins.open, os.replace, os.stat, sys.dont_write_bytecode) == originals
    assert torch.save is torch.serialization.save and io.open is builtins.open


@pytest.mark.slow
def test_save_then_rename_patterns_in_the_worker_leave_the_project_untouched(project):
    from amplint.runtime import verify

    script = write_script(project, checkpoint="""
        # save to a temporary name, then os.replace over last.pt, with a stale last.pt.tmp on disk
        torch.save(sd, "ck/last.pt.tmp")
        os.replace("ck/last.pt.tmp", "ck/last.pt")
        assert torch.load("ck/last.pt")["tag"] == "run", "save-then-replace: last.pt holds the new save"
        assert not os.path.exists("ck/last.pt.tmp"), "save-then-replace: the temporary name is gone"
        # timm's CheckpointSaver: unlink the old file, rename the new one in, hard-link a history copy
        torch.save(sd, "ck/tmp.pth")
        if os.path.exists("ck/best.pth"):
            os.unlink("ck/best.pth")
        os.rename("ck/tmp.pth", "ck/best.pth")
        os.link("ck/best.pth", "ck/checkpoint-3.pth")
        shutil.move("ck/checkpoint-3.pth", "ck/archive.pth")
        shutil.copy2("ck/best.pth", "ck/best-copy.pth")
        pathlib.Path("ck/best-copy.pth").replace("ck/kept.pth")
        shutil.rmtree("ck/old")
        found = sorted(glob.glob("ck/*"))
        assert found == ["ck/archive.pth", "ck/best.pth", "ck/kept.pth", "ck/last.pt", "ck/resume.pt"], found
        for name in ("ck/archive.pth", "ck/best.pth", "ck/kept.pth"):
            assert torch.load(name)["tag"] == "run", name + ": moved or copied in the run, it must load"
    """)
    before = snapshot(project)
    result = verify(script, [], steps=10, device="cpu")  # the worker process, both runs
    assert result.exit_code == 0, result.message
    assert snapshot(project) == before


def test_a_write_verify_cannot_redirect_is_refused_and_reported(project):
    from amplint.runtime.report import format_text
    from verify_helpers import run_verify

    script = write_script(project, checkpoint="""
        with io.FileIO("ck/last.pt", "wb") as f:  # opens past builtins.open and os.open
            torch.save(sd, f)
    """)
    before = snapshot(project)
    result = run_verify(script, args=[], steps=10, baseline="none")
    assert result.exit_code == 2
    path = project / "ck" / "last.pt"
    assert result.message.startswith(
        f"verify cannot judge: the script writes {path} in a way verify cannot redirect "
        "(a write-mode open past builtins.open and os.open"), result.message
    line = next(n for n, text in enumerate(open(script), 1) if "io.FileIO" in text)
    assert f"at {script}:{line})" in result.message
    assert format_text(result).splitlines()[-1] == f"verdict: ERROR - could not verify: {result.message}"
    assert snapshot(project) == before


@pytest.mark.slow
def test_each_ddp_rank_redirects_into_its_own_directory(project):
    script = write_script(project, before="""
        import torch.distributed as dist
        dist.init_process_group("gloo")
        rank = dist.get_rank()
    """, checkpoint="""
        torch.serialization.save(sd, f"ck/rank{rank}.pt")
        if rank == 0:
            torch.save(sd, "ck/last.pt.tmp")
            os.replace("ck/last.pt.tmp", "ck/last.pt")
            assert torch.load("ck/last.pt")["tag"] == "run"
        assert torch.load(f"ck/rank{rank}.pt")["tag"] == "run"
    """)
    before = snapshot(project)
    proc = run_cli("verify", "--nproc-per-node", "2", script, "--device", "cpu", "--steps", "10",
                   "--baseline", "none", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert snapshot(project) == before
