"""Instrumentation behaviour on small inline scripts: stopping, restoring, where findings point."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from verify_helpers import TRAINING, run_verify

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

LOOP = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(16, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cpu")
for step in range(100):
    x = torch.randn(32, 16)
{body}
"""


def write(tmp_path, body, name="train.py"):
    path = tmp_path / name
    path.write_text(LOOP.format(body=textwrap.indent(textwrap.dedent(body), "    ")))
    return path


def test_patches_are_restored_after_success_and_after_error():
    import torch
    from torch.amp.autocast_mode import autocast
    from torch.amp.grad_scaler import GradScaler
    from torch.optim import optimizer as optim_mod

    before = {
        "backward": torch.Tensor.backward,
        "autograd": torch.autograd.backward,
        "save": torch.save,
        "load": torch.load,
        "init_process_group": torch.distributed.init_process_group,
        "clip": torch.nn.utils.clip_grad_norm_,
        "to": torch.nn.Module.to,
        "half": torch.nn.Module.half,
        "is_available": torch.cuda.is_available,
        "scale": GradScaler.scale,
        "scaler_init": GradScaler.__init__,
        "autocast_init": autocast.__init__,
        "enter": autocast.__enter__,
    }
    hooks = (len(optim_mod._global_optimizer_pre_hooks), len(optim_mod._global_optimizer_post_hooks))
    for script in ("correct.py", "fp16_model_broken.py"):  # the second raises inside the loop
        run_verify(TRAINING / script)
        after = {
            "backward": torch.Tensor.backward,
            "autograd": torch.autograd.backward,
            "save": torch.save,
            "load": torch.load,
            "init_process_group": torch.distributed.init_process_group,
            "clip": torch.nn.utils.clip_grad_norm_,
            "to": torch.nn.Module.to,
            "half": torch.nn.Module.half,
            "is_available": torch.cuda.is_available,
            "scale": GradScaler.scale,
            "scaler_init": GradScaler.__init__,
            "autocast_init": autocast.__init__,
            "enter": autocast.__enter__,
        }
        assert after == before, script
        assert (len(optim_mod._global_optimizer_pre_hooks), len(optim_mod._global_optimizer_post_hooks)) == hooks


def test_stop_is_not_swallowed_by_except_exception(tmp_path):
    path = write(tmp_path, """
        try:
            with torch.autocast("cpu", dtype=torch.float16):
                loss = model(x).pow(2).mean()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
        except Exception:
            pass
    """)
    result = run_verify(path, args=[], steps=7, baseline="none")
    assert result.amp.status == "stopped"
    assert len(result.amp.steps) == 7


def test_bypass_without_update_is_found_and_diverges(tmp_path):
    path = write(tmp_path, """
        with torch.autocast("cpu", dtype=torch.float16):
            loss = model(x).pow(2).mean()
        scaler.scale(loss).backward()
        opt.step()  # line 15 of the script: scaled gradients, no skipping
        opt.zero_grad()
    """)
    result = run_verify(path, args=[], steps=10)
    assert [(f.code, f.location.row) for f in result.findings] == [("AMP007", 15)]
    assert result.exit_code == 1


def test_clip_value_after_unscale_is_silent_and_before_is_found(tmp_path):
    good = write(tmp_path, """
        with torch.autocast("cpu", dtype=torch.float16):
            loss = model(x).pow(2).mean()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
    """, "good.py")
    bad = write(tmp_path, """
        with torch.autocast("cpu", dtype=torch.float16):
            loss = model(x).pow(2).mean()
        scaler.scale(loss).backward()
        from torch.nn.utils import clip_grad_value_
        clip_grad_value_(model.parameters(), 0.5)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
    """, "bad.py")
    assert run_verify(good, args=[], steps=5, baseline="none").findings == []
    found = run_verify(bad, args=[], steps=5, baseline="none").findings
    assert [(f.code, f.location.row) for f in found] == [("AMP003", 16)]  # the clip_grad_value_ call


def test_save_with_scaler_state_or_without_optimizer_is_silent(tmp_path):
    path = write(tmp_path, """
        with torch.autocast("cpu", dtype=torch.float16):
            loss = model(x).pow(2).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        import io
        torch.save({"model": model.state_dict()}, io.BytesIO())
        torch.save({"optimizer": opt.state_dict(), "scaler": scaler.state_dict()}, io.BytesIO())
    """)
    result = run_verify(path, args=[], steps=3, baseline="none")
    assert result.findings == []


def test_gradient_accumulation_counts_optimizer_steps_and_averages_loss(tmp_path):
    path = write(tmp_path, """
        for micro in range(4):
            with torch.autocast("cpu", dtype=torch.float16):
                loss = model(x[micro * 8:(micro + 1) * 8]).pow(2).mean() / 4
            scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
    """)
    result = run_verify(path, args=[], steps=5, baseline="none")
    assert len(result.amp.steps) == 5
    assert result.amp.steps[-1].samples == 32  # 4 micro-batches of 8
    assert result.findings == []


def test_run_as_module(tmp_path, monkeypatch):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    write(pkg, """
        with torch.autocast("cpu", dtype=torch.float16):
            loss = model(x).pow(2).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
    """, "train.py")
    monkeypatch.chdir(tmp_path)
    from amplint.runtime import verify

    result = verify(module="mypkg.train", steps=4, device="cpu", baseline="none")
    assert result.amp.status == "stopped" and len(result.amp.steps) == 4


def test_importing_the_runtime_package_does_not_import_torch():
    code = "import sys, amplint.runtime, amplint.runtime.command; assert 'torch' not in sys.modules, 'torch imported'"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_unknown_device_and_missing_script_are_errors(tmp_path):
    from amplint.runtime import verify

    assert verify(str(tmp_path / "nope.py"), device="cpu").exit_code == 2
    import torch

    if not torch.cuda.is_available():
        result = verify(str(TRAINING / "correct.py"), device="cuda")
        assert result.exit_code == 2 and "CUDA" in result.message


@pytest.mark.parametrize("argv", [["--steps", "6"], ["--steps=6"]])
def test_script_arguments_reach_the_script(argv):
    result = run_verify(TRAINING / "correct.py", args=argv, steps=40, baseline="none")
    assert result.amp.status == "completed" and len(result.amp.steps) == 6


def test_one_dynamic_check_per_code_each_named_by_the_rule_registry():
    from amplint.rules.catalog import rule_catalog
    from amplint.runtime.checks import ALL_CHECKS

    codes = [check.code for check in ALL_CHECKS]
    assert len(codes) == len(set(codes)) and set(codes) <= set(rule_catalog())


def test_runtime_findings_are_linter_findings_worded_by_their_rule(tmp_path):
    from amplint.model import Finding
    from amplint.rules.catalog import rule_catalog

    path = write(tmp_path, """
        with torch.autocast("cpu", dtype=torch.float16):
            loss = model(x).pow(2).mean()
            scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
    """)
    [finding] = run_verify(path, args=[], steps=3, baseline="none").findings
    assert isinstance(finding, Finding)
    assert finding.code == "AMP002" and finding.location.row == 14
    assert finding.message.startswith(rule_catalog()["AMP002"].summary + ": backward() ran while autocast was enabled")
