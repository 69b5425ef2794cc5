"""Runtime soundness of the fixes: a fixed training loop computes what the correct loop computes.

Each script in fixtures/runtime/soundness/ holds a misuse amplint fixes and the same loop written
correctly by hand, on the same seed and data (CPU, float16 autocast, `GradScaler("cpu")`); run,
it prints every variant's parameters after each optimizer step (see soundness_harness.py). A copy
of the directory is fixed as a user fixes it (`amplint check --select ALL --fix`, and a second copy
with `--unsafe-fixes`), and both the original and the fixed scripts run (each directory's scripts
in one interpreter, one after another as `__main__`, so that torch is imported once):

- the original misuse shows its symptom (it raises, or its weights differ from the correct loop's);
- the fixed misuse matches the correct loop step for step;
- where the loop has an AMP-off path (scaler disabled, `None`, autocast off) the fixed script
  computes exactly what the original did on it: a fix must not change a correct path;
- the shapes whose fix is only unsafe show why at runtime: applied anyway, it breaks a path the
  original ran correctly (AMP off, a resume across AMP settings, a loss its caller already scaled).
"""

from __future__ import annotations

import ast
import json
import math
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from runtime_truth import RUNTIME, TIMEOUT

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

SOUNDNESS = RUNTIME / "soundness"


@dataclass(frozen=True)
class Script:
    findings: tuple[tuple[str, int, str], ...]  # (code, row, applicability) with ALL selected
    misuses: tuple[str, ...] = ("misuse",)  # variants the safe fix turns into `correct`
    keep: tuple[str, ...] = ("correct",)  # top-level functions/classes the safe fix must not touch
    symptom: bool = True  # the original misuse raises or trains differently from `correct`


SCRIPTS = {
    # Behaviour-preserving rewrites: the misuse already trains like the correct loop; the fix must keep it so.
    "amp001_deprecated_api.py": Script((("AMP001", 16, "safe"), ("AMP001", 21, "safe")), symptom=False),
    "amp002_backward_in_autocast.py": Script((("AMP002", 21, "safe"), ("AMP002", 22, "safe")), symptom=False),
    "amp003_clip_before_unscale.py": Script((("AMP003", 22, "safe"),)),
    "amp004_scaler_per_step.py": Script((("AMP004", 17, "safe"),)),
    "amp006_resume_scaler_state.py": Script(
        (("AMP006", 28, "safe"), ("AMP006", 38, "safe"), ("AMP006", 71, "unsafe"), ("AMP006", 81, "safe")),
        keep=("correct_train", "resumed"),
    ),
    "amp007_step_bypasses_scaler.py": Script(
        (("AMP007", 27, "safe"), ("AMP007", 64, "unsafe")), keep=("correct", "amp_branch"),
    ),
    "amp008_unscaled_backward.py": Script((("AMP008", 21, "safe"),)),
    "amp008_optional_self_scaler.py": Script((("AMP008", 22, "safe"),), keep=("CorrectTrainer", "fit")),
    "amp009_update.py": Script(
        (("AMP009", 23, "safe"), ("AMP009", 39, "safe")), misuses=("misuse", "misordered"),
    ),
    "amp012_update_per_microbatch.py": Script((("AMP012", 26, "safe"),)),
    "amp017_clip_error_if_nonfinite.py": Script(
        (("AMP017", 28, "safe"), ("AMP017", 68, "unsafe")), keep=("correct", "flag_misuse"),
    ),
    # Silent on a helper its callers scale for; AccumTrainer's fix is unsafe (see the tests below).
    "amp008_helper_scaled_by_callers.py": Script(
        (("AMP008", 53, "unsafe"),), misuses=(), keep=("Trainer", "NaiveTrainer", "AccumTrainer", "fit"),
    ),
}
UNSAFE_RUNS = ("amp006_resume_scaler_state.py", "amp007_step_bypasses_scaler.py",
               "amp017_clip_error_if_nonfinite.py", "amp008_helper_scaled_by_callers.py")


def _amplint(root: Path, *options: str) -> list[dict]:
    result = subprocess.run(
        [sys.executable, "-m", "amplint", "check", "--no-cache", "--select", "ALL", "--exit-zero",
         "--output-format", "json", *options, "."],
        capture_output=True, text=True, timeout=TIMEOUT, cwd=root,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return json.loads(result.stdout)


def _fixed_copy(tmp: Path, name: str, *options: str) -> Path:
    root = tmp / name
    shutil.copytree(SOUNDNESS, root)
    before = {p.name: p.read_text(encoding="utf-8") for p in root.glob("*.py")}
    _amplint(root, *options)
    fixed = {p.name: p.read_text(encoding="utf-8") for p in root.glob("*.py")}
    _amplint(root, *options)
    assert {p.name: p.read_text(encoding="utf-8") for p in root.glob("*.py")} == fixed, "a second --fix changed something"
    assert fixed["soundness_harness.py"] == before["soundness_harness.py"]
    return root


# Runs each named script of one directory as ``__main__``, one after another in one interpreter, so
# that torch is imported once per directory rather than once per script; each script seeds its own
# runs and prints one JSON line, collected here by name.
_DRIVER = """
import contextlib, io, json, runpy, sys
sys.path.insert(0, ".")
out = {}
for name in sys.argv[1:]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        runpy.run_path(name, run_name="__main__")
    out[name] = json.loads(printed.getvalue().strip().splitlines()[-1])
print(json.dumps(out))
"""


def _run_scripts(root: Path, names: list[str]) -> dict[str, dict]:
    result = subprocess.run([sys.executable, "-c", _DRIVER, *names], capture_output=True, text=True,
                            timeout=TIMEOUT, cwd=root)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("soundness")
    original = tmp / "original"
    shutil.copytree(SOUNDNESS, original)
    dirs = {"original": original, "safe": _fixed_copy(tmp, "safe", "--fix"),
            "unsafe": _fixed_copy(tmp, "unsafe", "--fix", "--unsafe-fixes")}
    jobs = {"original": list(SCRIPTS), "safe": list(SCRIPTS), "unsafe": list(UNSAFE_RUNS)}
    with ThreadPoolExecutor(max_workers=2) as pool:  # two cores
        reports = dict(zip(jobs, pool.map(lambda kind: _run_scripts(dirs[kind], jobs[kind]), jobs)))
    out: dict = dict(reports)
    out["findings"] = _amplint(original, "--unsafe-fixes")
    out["dirs"] = dirs
    return out


def _params(report: dict, variant: str) -> list[list[float]]:
    assert "error" not in report[variant], f"{variant}: {report[variant]['error']}"
    return report[variant]["params"]


def _close(a: list[list[float]], b: list[list[float]]) -> bool:
    return len(a) == len(b) and all(
        len(x) == len(y) and all(math.isclose(u, v, rel_tol=1e-5, abs_tol=1e-6) for u, v in zip(x, y)) for x, y in zip(a, b)
    )


def _top_level(text: str) -> dict[str, str]:
    return {node.name: ast.dump(node) for node in ast.parse(text).body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_the_script_holds_the_findings_it_is_written_for(runs, name):
    found = sorted(
        (f["code"], f["location"]["row"], f["fix"]["applicability"] if f.get("fix") else None)
        for f in runs["findings"] if Path(f["filename"]).name == name
    )
    assert found == sorted(SCRIPTS[name].findings)


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_the_safe_fix_leaves_the_correct_code_alone(runs, name):
    before = _top_level((runs["dirs"]["original"] / name).read_text(encoding="utf-8"))
    after = _top_level((runs["dirs"]["safe"] / name).read_text(encoding="utf-8"))
    for kept in SCRIPTS[name].keep:
        assert after[kept] == before[kept], f"the fix changed {kept}"


@pytest.mark.parametrize("name", [n for n, s in SCRIPTS.items() if s.misuses])
def test_the_fixed_misuse_trains_exactly_like_the_correct_loop(runs, name):
    original, fixed = runs["original"][name], runs["safe"][name]
    correct = _params(original, "correct")
    assert _params(fixed, "correct") == correct
    for variant in SCRIPTS[name].misuses:
        assert _close(_params(fixed, variant), correct), f"fixed {variant} != correct"
        if SCRIPTS[name].symptom:
            # The comparison can fail: before the fix the misuse raised or trained differently.
            assert "error" in original[variant] or not _close(original[variant]["params"], correct)


@pytest.mark.parametrize("name", [n for n, s in SCRIPTS.items() if s.misuses])
def test_the_fix_does_not_change_the_amp_off_path(runs, name):
    original, fixed = runs["original"][name], runs["safe"][name]
    off = [v for v in original if v.endswith("_off") and v.split("_off")[0] in (*SCRIPTS[name].misuses, "correct")]
    assert off, "the script has no AMP-off path"
    for variant in off:
        assert _params(fixed, variant) == _params(original, variant), f"{variant} changed"
        assert _close(_params(fixed, variant), _params(original, "correct_off"))


def test_amp007_fix_of_a_step_shared_with_the_float32_path_is_unsafe_for_a_reason(runs):
    name = "amp007_step_bypasses_scaler.py"
    original, safe, unsafe = runs["original"][name], runs["safe"][name], runs["unsafe"][name]
    assert _params(original, "branch_off") == _params(original, "correct_off")
    assert safe["branch_off"] == original["branch_off"] and "error" in safe["branch"]
    # Applied anyway, the AMP path trains, and the float32 path that trained before now asserts.
    assert _close(_params(unsafe, "branch"), _params(original, "correct"))
    assert unsafe["branch_off"]["error"].startswith("AssertionError: Attempted step but _scale is None")


def test_amp006_restore_of_a_flag_enabled_scaler_is_unsafe_for_a_reason(runs):
    name = "amp006_resume_scaler_state.py"
    original, safe, unsafe = runs["original"][name], runs["safe"][name], runs["unsafe"][name]
    # Saved with AMP off, resumed with AMP on: the original resumes with a fresh scaler, and so
    # does the safe fix (it only adds the key on save).
    assert _params(safe, "flag_switched") == _params(original, "flag_switched")
    assert _close(_params(unsafe, "flag"), _params(original, "correct"))
    assert unsafe["flag_switched"]["error"].startswith("RuntimeError: The source state dict is empty")


def test_amp017_drop_with_a_flag_enabled_scaler_is_unsafe_for_a_reason(runs):
    name = "amp017_clip_error_if_nonfinite.py"
    original, safe, unsafe = runs["original"][name], runs["safe"][name], runs["unsafe"][name]
    # AMP off and a corrupt batch: the keyword stops the run, before and after the safe fix ...
    assert original["flag_off_corrupt"]["error"].startswith("RuntimeError: The total norm of order 2.0")
    assert safe["flag_off_corrupt"] == original["flag_off_corrupt"]
    # ... and without it the optimizer steps on the NaN gradient.
    assert any(math.isnan(v) for v in _params(unsafe, "flag_off_corrupt")[-1])


def _updates(history: list[list[float]]) -> list[float]:
    return [max(abs(u - v) for u, v in zip(after, before)) for before, after in zip(history, history[1:])]


def _scaled_twice(history: list[list[float]], correct: list[list[float]]) -> bool:
    """Every step is skipped (an overflow: no update) or ~scale times too large, never the correct size."""
    largest = max(_updates(correct))
    moves = [u for u in _updates(history) if u > 0]
    return bool(moves) and all(u > 50 * largest for u in moves)


def test_rewriting_a_helper_its_callers_scale_for_would_scale_twice(runs):
    name = "amp008_helper_scaled_by_callers.py"
    original, safe = runs["original"][name], runs["safe"][name]
    assert safe == original, "nothing in this file has a safe fix"
    correct = _params(original, "correct")
    assert max(_updates(correct)) > 0.01, "the correct loop trains"
    # The naive rewrite: skipped steps while the scale backs off, then steps ~scale times too large.
    assert _scaled_twice(_params(original, "naive"), correct)
    assert original["naive_off"]["error"] == "AttributeError: 'NoneType' object has no attribute 'scale'"
    assert _params(original, "correct_off") != correct


def test_the_unsafe_fix_of_a_loss_computed_from_a_parameter_would_scale_twice(runs):
    name = "amp008_helper_scaled_by_callers.py"
    original, unsafe = runs["original"][name], runs["unsafe"][name]
    assert _params(original, "accum") == _params(original, "correct"), "its caller scales: the helper is right"
    assert _scaled_twice(_params(unsafe, "accum"), _params(original, "correct"))
