"""Every fix in the rule fixtures, all rules together, applied as a user applies them.

`tests/test_fixtures.py` fixes each fixture with its own rule selected. A user runs
`amplint check --select ALL --fix` (or `--fix --unsafe-fixes`) over a tree, where the rules' fixes
meet in one file. Here a copy of every `fixtures/AMPNNN/*.py` is fixed so, by the real CLI, and:

- every fixed file parses and compiles;
- the fixes converge: a second `--fix` changes nothing;
- every fix offered is applied: nothing the run could fix is left behind (a fix the applier
  dropped, because its result did not parse or clashed with another, would show here);
- the safe fixes leave the `good_*` fixtures alone, except for findings of other rules a good
  fixture holds on purpose (listed below, each with its reason): a good fixture is a correct
  program, and a safe fix must not change what a correct program does.

The runtime half of the soundness check, which runs fixed loops, is tests/test_fix_soundness.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# Good fixtures of one rule that hold true findings of another, whose safe fixes may rewrite them.
# A new entry needs a reason: a safe fix on a good fixture is a soundness bug until shown otherwise.
OTHER_RULES_IN_GOOD_FIXTURES = {
    # The deprecated `torch.cuda.amp` spelling of the real code these fixtures copy; AMP001's
    # rewrite keeps behaviour (tests/test_amp001_equivalence.py) and the fixture's own rule is silent.
    "AMP002/good_nanogpt_train.py": {"AMP001"},
    "AMP002/good_yolo_trainer.py": {"AMP001"},
    "AMP003/good_frameworks.py": {"AMP001"},
    "AMP003/good_native_scaler_helpers.py": {"AMP001"},
    "AMP004/good_evolve_runs.py": {"AMP001"},
    "AMP004/good_nanogpt_scaler.py": {"AMP001"},
    "AMP004/good_setup.py": {"AMP001"},
    "AMP006/good_nested_save_helper.py": {"AMP001"},
    "AMP014/good_cuda_meant.py": {"AMP001"},
    "AMP014/good_float16_cast_and_cuda_functions.py": {"AMP001"},
    "AMP015/good_device_types.py": {"AMP001"},
    "AMP016/good_safe_bce.py": {"AMP001"},
    "AMP018/good_cuda_float32_island.py": {"AMP001"},
    "AMP018/good_supported_dtypes.py": {"AMP001"},
    "AMP023/good_file_with_sharded_scaler.py": {"AMP001"},
    # train_accumulating steps a scaler it never scales with: good for AMP013 (a scaler is there),
    # an unscaled backward for AMP008, as the fixture's comment says.
    "AMP013/good_loops_without_float16.py": {"AMP008"},
    # fsdp_step clips (FSDP's model.clip_grad_norm_) before unscale_: good for AMP017, AMP003's finding.
    "AMP017/good_framework_clip.py": {"AMP003"},
}


@dataclass
class Applied:
    mode: str  # "safe": --fix; "unsafe": --fix --unsafe-fixes
    root: Path
    fixed: dict[str, str]  # relative path -> text after the first --fix
    again: dict[str, str]  # relative path -> text after a second --fix
    remaining: list[dict]  # what the first --fix run still reported


def _copy_fixtures(dest: Path) -> Path:
    for path in sorted(FIXTURES.glob("AMP[0-9][0-9][0-9]/*.py")):
        target = dest / path.parent.name / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    return dest


def _check(root: Path, *options: str) -> list[dict]:
    result = subprocess.run(
        [sys.executable, "-m", "amplint", "check", "--no-cache", "--select", "ALL", "--exit-zero",
         "--output-format", "json", *options, "."],
        capture_output=True, text=True, timeout=600, cwd=root,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return json.loads(result.stdout)


def _texts(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.py"))}


def _relative(finding: dict, root: Path) -> str:
    return Path(finding["filename"]).resolve().relative_to(root.resolve()).as_posix()


@pytest.fixture(scope="module")
def original(tmp_path_factory) -> tuple[dict[str, str], list[dict], Path]:
    """The fixtures' texts and every finding with every fix it offers (``--unsafe-fixes`` shows them)."""
    root = _copy_fixtures(tmp_path_factory.mktemp("original"))
    return _texts(root), _check(root, "--unsafe-fixes"), root


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Applied]:
    out = {}
    for mode, options in (("safe", ("--fix",)), ("unsafe", ("--fix", "--unsafe-fixes"))):
        root = _copy_fixtures(tmp_path_factory.mktemp(mode))
        remaining = _check(root, *options)
        fixed = _texts(root)
        _check(root, *options)
        out[mode] = Applied(mode, root, fixed, _texts(root), remaining)
    return out


def _changed(applied: Applied, original) -> list[str]:
    before = original[0]
    return [name for name, text in applied.fixed.items() if text != before[name]]


MODES = ("safe", "unsafe")


@pytest.mark.parametrize("mode", MODES)
def test_the_fixes_change_many_fixtures(runs, original, mode):
    # Guards the checks below against passing on nothing: most bad fixtures have a fix.
    assert len(_changed(runs[mode], original)) > 100


@pytest.mark.parametrize("mode", MODES)
def test_every_fixed_file_parses_and_compiles(runs, original, mode):
    changed = _changed(runs[mode], original)
    assert changed, "the fixes changed no fixture: nothing was checked"
    for name in changed:
        text = runs[mode].fixed[name]
        cst.parse_module(text)
        compile(text, name, "exec")


@pytest.mark.parametrize("mode", MODES)
def test_a_second_fix_changes_nothing(runs, mode):
    applied = runs[mode]
    assert [name for name in applied.fixed if applied.again[name] != applied.fixed[name]] == []


@pytest.mark.parametrize("mode", MODES)
def test_every_fix_offered_is_applied(runs, mode):
    applicable = {"safe": {"safe"}, "unsafe": {"safe", "unsafe"}}[mode]
    unapplied = [
        f"{_relative(f, runs[mode].root)}:{f['location']['row']} {f['code']} [{f['fix']['applicability']}]"
        for f in runs[mode].remaining if f.get("fix") and f["fix"]["applicability"] in applicable
    ]
    assert unapplied == []


def test_safe_fixes_touch_good_fixtures_only_for_other_rules_findings(runs, original):
    before, findings, root = original
    safe_codes: dict[str, set[str]] = {}
    for finding in findings:
        if finding.get("fix") and finding["fix"]["applicability"] == "safe":
            safe_codes.setdefault(_relative(finding, root), set()).add(finding["code"])
    touched = {
        name: safe_codes.get(name, set())
        for name in before
        if Path(name).name.startswith("good_") and runs["safe"].fixed[name] != before[name]
    }
    assert touched == OTHER_RULES_IN_GOOD_FIXTURES
    for name, codes in touched.items():
        assert name.split("/")[0] not in codes, f"{name}: its own rule's safe fix rewrites a good fixture"
