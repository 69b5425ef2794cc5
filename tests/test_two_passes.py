"""A run large enough for the worker pool goes over its files twice: a first pass, forked before
libcst is imported, settles the files that need no parse; a second lints the others."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

from amplint.jobs import Job, ToLint, process_file, run_jobs
from amplint.pool import POOL_THRESHOLD
from amplint.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


def _outcome(result) -> tuple:
    return (result.filename, result.skipped, [(f.code, f.location, f.message) for f in result.findings],
            [e.message for e in result.errors])


def test_two_passes_give_what_one_pass_gives():
    paths = sorted((ROOT / "fixtures").rglob("*.py"))
    assert len(paths) > POOL_THRESHOLD
    settings = Settings(root=str(ROOT))
    jobs = [Job(str(path), settings, display=str(path.relative_to(ROOT))) for path in paths]
    one = run_jobs(jobs, 1)
    two = run_jobs(jobs, 2)
    assert [_outcome(r) for r in two] == [_outcome(r) for r in one]
    assert sum(bool(r.findings) for r in two) > 50


def test_the_first_pass_hands_the_gates_answer_to_the_second(tmp_path, monkeypatch):
    import amplint.rule_gates as rule_gates

    path = tmp_path / "train.py"
    path.write_text("import torch\n\nwith torch.cuda.amp.autocast():\n    y = model(x)\n", encoding="utf-8")
    job = Job(str(path), Settings(root=str(tmp_path)), display="train.py")
    first = process_file(job, lint=False)
    assert isinstance(first, ToLint) and first.gated and "AMP001" in first.gated
    asked: list[int] = []
    real = rule_gates.codes_that_may_report_from_text
    monkeypatch.setattr(rule_gates, "codes_that_may_report_from_text", lambda *a, **k: asked.append(1) or real(*a, **k))
    second = process_file(replace(job, screened=True, gated=first.gated))
    assert asked == []
    assert _outcome(second) == _outcome(process_file(job))
    # A file the gates rule out needs no second pass.
    path.write_text("import torch\n\nwith torch.autocast('cuda', enabled=False):\n    y = model(x)\n", encoding="utf-8")
    assert process_file(job, lint=False).skipped


SCRIPT = textwrap.dedent("""\
    import sys
    from amplint.jobs import Job, run_jobs
    from amplint.settings import Settings
    paths = sys.argv[1:]
    results = run_jobs([Job(p, Settings()) for p in paths], 2)
    print(sum(len(r.findings) for r in results), "libcst" in sys.modules)
""")


def test_a_run_whose_files_need_no_parse_never_imports_libcst(tmp_path):
    names = []
    for index in range(POOL_THRESHOLD + 6):
        path = tmp_path / f"m{index:02}.py"
        path.write_text(f"def f{index}(x):\n    return x + {index}\n", encoding="utf-8")
        names.append(str(path))
    # A rotary embedding's disabled autocast: past the substring stage, ruled out on its lines.
    (tmp_path / "rotary.py").write_text(
        "import torch\n\ndef f(x):\n    with torch.autocast('cuda', enabled=False):\n        return x.float()\n", encoding="utf-8")
    names.append(str(tmp_path / "rotary.py"))
    run = subprocess.run([sys.executable, "-c", SCRIPT, *names], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["0", "False"]
    (tmp_path / "train.py").write_text("import torch\nscaler = torch.cuda.amp.GradScaler()\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-c", SCRIPT, *names, str(tmp_path / "train.py")], capture_output=True, text=True, check=True)
    findings, imported = run.stdout.split()
    assert int(findings) >= 1 and imported == "True"


def test_a_gates_answer_that_read_the_project_is_asked_again_where_the_file_is_linted(tmp_path):
    # AMP006's gate asks the project whether an imported class builds a GradScaler; the question
    # is recorded in the context of the pass that asked it. The second pass asks it again, so
    # that its cache entry records what the result depends on.
    from amplint.project.phase import with_project_context

    (tmp_path / "helpers.py").write_text(
        "import torch\n\n\nclass Wrapper:\n    def __init__(self):\n        self.s = torch.cuda.amp.GradScaler()\n\n\n"
        "def save_ckpt(optimizer, path):\n    torch.save({'optimizer': optimizer.state_dict()}, path)\n", encoding="utf-8")
    train = tmp_path / "train.py"
    train.write_text(
        "import torch\nfrom helpers import Wrapper, save_ckpt\n\nscaler_cfg = 1\nw = Wrapper()\n"
        "save_ckpt(optimizer, 'ckpt.pt')\nwith torch.cuda.amp.autocast():\n    pass\n", encoding="utf-8")
    job = Job(str(train), Settings(root=str(tmp_path)), display="train.py")
    data = train.read_bytes()
    asked = with_project_context(job, data)
    assert asked.project is not None
    first = process_file(asked, data, lint=False)
    assert isinstance(first, ToLint) and first.gated is None and asked.project.read
    jobs = [Job(str(train), Settings(root=str(tmp_path)), display="train.py")]
    two = run_jobs(jobs * POOL_THRESHOLD, 2)
    one = run_jobs(jobs, 1)
    assert all(_outcome(result) == _outcome(one[0]) for result in two)
    assert one[0].findings
