"""The shapes where a rewrite would change what a correct program does get no safe fix.

Each case is code where the obvious fix is wrong on some path the code can take: a backward
helper whose callers already scale the loss (the rewrite scales twice), a scaler that is None or
disabled without AMP (the rewrite raises, or changes the float32 run), a second `unscale_`, an
autocast nested in another. The rule may still report the finding; its fix must then be unsafe
or absent. tests/test_fix_soundness.py runs several of these shapes and shows the wrong fix's
symptom on CPU.
"""

from __future__ import annotations

from pathlib import Path
import pytest

from amplint.engine import lint_text
from amplint.settings import Settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _findings(text: str, select: str = "ALL") -> list[tuple[str, int, str | None]]:
    result = lint_text(text, "train.py", Settings(select=(select,)))
    assert not result.errors, result.errors
    return [(f.code, f.location.row, f.fix.applicability if f.fix is not None else None) for f in result.findings]


@pytest.mark.parametrize("name", ["good_step_helper_scaled_by_every_caller.py", "good_backward_helper_scaled_by_callers.py"])
def test_a_helper_whose_every_caller_scales_the_loss_gets_no_finding_at_all(name):
    assert _findings((FIXTURES / "AMP008" / name).read_text(encoding="utf-8")) == []


def test_a_public_helper_whose_callers_here_do_not_scale_gets_an_unsafe_fix_only():
    # Callers in other modules may pass scaler.scale(loss); only the private helper is fixed safely.
    text = (FIXTURES / "AMP008" / "bad_step_helper_never_scaled.py").read_text(encoding="utf-8")
    assert _findings(text, "AMP008") == [("AMP008", 14, "safe"), ("AMP008", 20, "unsafe")]


OPTIONAL_SCALER = """\
import torch


class Trainer:
    def __init__(self, model, optimizer, use_amp):
        self.model = model
        self.optimizer = optimizer
        self.scaler = torch.amp.GradScaler("cuda") if use_amp else None
"""

CASES = {
    # `(loss / self.accum).backward()` on a parameter its caller scales: rewriting it scales twice.
    "loss computed from a parameter": (OPTIONAL_SCALER + """
    def _backward(self, loss):
        (loss / 2).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()

    def train_batch(self, batch):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = self.model(batch)
        self._backward(self.scaler.scale(loss))
""", "AMP008", 11),
    # Losses handed in as a list are summed: a caller may have scaled each.
    "losses summed from a parameter": (OPTIONAL_SCALER + """
    def _backward(self, losses):
        sum(losses).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
""", "AMP008", 11),
    # The FP32 arm reaches the shared step: self.scaler.step would raise AttributeError there.
    "step shared with the path where the scaler is None": (OPTIONAL_SCALER + """
    def train_batch(self, batch):
        with torch.autocast("cuda", dtype=torch.float16, enabled=self.scaler is not None):
            loss = self.model(batch)
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
        else:
            loss.backward()
        self.optimizer.step()
""", "AMP007", 17),
    # Without AMP an enabled scaler that never scaled asserts in scaler.step.
    "step shared with the use_amp=False path": ("""\
import torch


def train(model, optimizer, loader, use_amp):
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16, enabled=use_amp):
            loss = model(x, y)
        if use_amp:
            scaler.scale(loss).backward()
        else:
            loss.backward()
        optimizer.step()
""", "AMP007", 13),
    # With the scaler None the run has no scaler to skip a NaN step: the keyword is its guard.
    "error_if_nonfinite with a scaler that may be None": (OPTIONAL_SCALER + """
    def train_batch(self, batch):
        loss = self.model(batch)
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(self.optimizer)
        else:
            loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0, error_if_nonfinite=True)
""", "AMP017", 17),
    # A disabled scaler skips nothing either.
    "error_if_nonfinite with a flag-enabled scaler": ("""\
import torch


def step(model, optimizer, loss, use_amp):
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
    scaler.step(optimizer)
    scaler.update()
""", "AMP017", 8),
    # An AMP-off run saves the disabled scaler's {}, which an enabled scaler refuses to load.
    "restore of a flag-enabled scaler": ("""\
import torch


def resume(model, optimizer, path, use_amp):
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    checkpoint = torch.load(path)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    return scaler
""", "AMP006", 8),
    # torch.amp.autocast("cuda") would inherit bfloat16 where the old class hard-codes float16.
    "old autocast nested in a bfloat16 region": ("""\
import torch


def forward(model, x):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        with torch.cuda.amp.autocast():
            return model(x)
""", "AMP001", 6),
    # A disabled region still sets the dtype its body inherits: with use_bf16 False the new inner
    # region would run in bfloat16 too, where the old class ran float16.
    "old autocast nested in a disabled bfloat16 region": ("""\
import torch


def forward(model, x):
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=False):
        with torch.cuda.amp.autocast():
            return model(x)
""", "AMP001", 6),
    # The cache setting is inherited as well (here given positionally: device, dtype, enabled, cache).
    "old autocast nested in a region without the weight cache": ("""\
import torch


def forward(model, x):
    with torch.autocast("cuda", torch.float16, True, False):
        with torch.cuda.amp.autocast():
            return model(x)
""", "AMP001", 6),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_fix_that_would_change_a_correct_path_is_unsafe(case):
    text, code, row = CASES[case]
    assert _findings(text, code) == [(code, row, "unsafe")]


def test_an_unscale_after_the_clip_is_not_duplicated_before_it():
    # A second unscale_ before update() raises: the existing call has to move, which is not automatic.
    text = (FIXTURES / "AMP003" / "bad_unscale_after_clip.py").read_text(encoding="utf-8")
    assert _findings(text, "AMP003") == [("AMP003", 13, None)]


def test_the_optional_scaler_fix_keeps_the_path_without_a_scaler():
    text = (FIXTURES / "AMP008" / "bad_optional_self_scaler.py").read_text(encoding="utf-8")
    fixed = lint_text(text, "train.py", Settings(select=("AMP008",)), fix=True).source
    assert "        (self.scaler.scale(loss) if self.scaler is not None else loss).backward()  # expect" in fixed


NEAR_MISSES = {
    # Regions that set the old class's own defaults (float16 on CUDA, the cache on), one disabled:
    # the rewrite inherits what the old class hard-coded.
    "AMP001": ("""\
import torch


def forward(model, x, amp):
    with torch.autocast("cuda", dtype=torch.float16, cache_enabled=True):
        with torch.autocast("cuda", enabled=False):
            with torch.cuda.amp.autocast(enabled=amp):
                return model(x)
""", 7),
    # The scaler is always enabled and never None: each fix below is right on every path.
    "AMP006": ("""\
import torch


def resume(model, optimizer, path):
    scaler = torch.amp.GradScaler("cuda")
    checkpoint = torch.load(path)
    optimizer.load_state_dict(checkpoint["optimizer"])
    return scaler
""", 7),
    "AMP007": ("""\
import torch


def step(model, optimizer, loss):
    scaler = torch.amp.GradScaler("cuda")
    scaler.scale(loss).backward()
    optimizer.step()
""", 7),
    "AMP017": ("""\
import torch


def step(model, optimizer, loss):
    scaler = torch.amp.GradScaler("cuda")
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
    scaler.step(optimizer)
    scaler.update()
""", 8),
}


@pytest.mark.parametrize("code", list(NEAR_MISSES))
def test_the_same_shapes_with_an_always_enabled_scaler_keep_a_safe_fix(code):
    # The downgrades above are no wider than the hazard.
    text, row = NEAR_MISSES[code]
    assert _findings(text, code) == [(code, row, "safe")]


@pytest.mark.parametrize("target, fixed", [((2, 3), False), ((2, 4), True), (None, True)])
def test_the_device_argument_is_passed_only_where_the_target_torch_takes_it(target, fixed):
    # torch.is_autocast_enabled("cuda") is a TypeError before torch 2.4.
    text = "import torch\n\n\ndef amp_on():\n    return torch.is_autocast_enabled()\n"
    (finding,) = lint_text(text, "train.py", Settings(select=("AMP014",), target_torch=target)).findings
    assert (finding.fix is not None) == fixed
