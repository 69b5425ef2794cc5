"""bench/sweep.py's core on a handful of real files, and proof that it catches what it looks for.

The full sweep (torch and the bench corpus) is run by hand; its last result is in
docs/reliability.md. These keep the script working and its checks honest.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import sweep  # noqa: E402

AMPLINT = [sys.executable, "-m", "amplint"]
FIXTURES = ("AMP001/bad_import_forms.py", "AMP003/bad_basic_loops.py", "AMP009/bad_update_before_step.py",
            "AMP002/good_nanogpt_train.py")
TORCH_FILES = ("amp/grad_scaler.py", "cuda/amp/grad_scaler.py", "cuda/amp/autocast_mode.py")


def _torch_root() -> Path:
    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.submodule_search_locations, "torch is a CI dependency"
    return Path(list(spec.submodule_search_locations)[0])


def test_sweep_of_a_few_real_files_passes_and_leaves_the_originals_alone(tmp_path):
    fixture_root = ROOT / "fixtures"
    torch_root = _torch_root()
    trees = [
        sweep.Tree("fixtures", fixture_root, [fixture_root / name for name in FIXTURES]),
        sweep.Tree("torch", torch_root.parent, [torch_root / name for name in TORCH_FILES]),
    ]
    before = {path: path.read_bytes() for tree in trees for path in tree.files}
    report = sweep.sweep(trees, AMPLINT, tmp_path)
    assert report.failures == []
    assert report.files == len(FIXTURES) + len(TORCH_FILES)
    assert report.files_with_findings >= 3 and report.files_fixed >= 3
    assert report.findings["AMP001"] >= 1 and report.findings["AMP003"] >= 1
    assert (tmp_path / "fixtures" / "AMP001" / "bad_import_forms.py").read_bytes() != before[fixture_root / FIXTURES[0]]
    assert all(path.read_bytes() == data for path, data in before.items())


# A stand-in for amplint that misbehaves on purpose: each sweep check must notice.
FAKE = '''
import json, os, sys
mode, args = sys.argv[1], sys.argv[2:]
files = args[args.index("--") + 1:]
if "--fix" in args:
    for name in files:
        with open(name, "a") as handle:
            handle.write({"corrupt": "def (:\\n", "diverge": "x = 1\\n"}.get(mode, ""))
    sys.exit(0)
if mode == "internal":
    print(f"amplint: error: {files[0]}: internal error in rule AMP003: KeyError: 'x'", file=sys.stderr)
print(json.dumps([{"code": "AMP001", "filename": os.path.abspath(name)} for name in files]))
'''


@pytest.mark.parametrize(("mode", "expected"), [
    ("corrupt", "the fixed file does not compile"),
    ("diverge", "changed the file again (fixes do not converge)"),
    ("internal", "internal error in rule AMP003"),
])
def test_sweep_reports_each_kind_of_failure(tmp_path, mode, expected):
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text("import torch\nx = 1\n", encoding="utf-8")
    fake = tmp_path / "fake_amplint.py"
    fake.write_text(FAKE, encoding="utf-8")
    report = sweep.sweep([sweep.Tree("src", source, sweep.python_files(source))], [sys.executable, str(fake), mode],
                         tmp_path / "work")
    assert not report.ok
    assert any(expected in failure for failure in report.failures), report.failures
    assert (source / "train.py").read_text(encoding="utf-8") == "import torch\nx = 1\n"


def test_a_file_python_rejects_must_come_back_unchanged(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "broken.py").write_text("import torch\ndef (:\n", encoding="utf-8")
    fake = tmp_path / "fake_amplint.py"
    fake.write_text(FAKE, encoding="utf-8")
    report = sweep.sweep([sweep.Tree("src", source, sweep.python_files(source))], [sys.executable, str(fake), "diverge"],
                         tmp_path / "work")
    assert any("rewritten although this Python rejects it" in failure for failure in report.failures), report.failures
