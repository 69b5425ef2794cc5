"""The project pass: module summaries, joined across same-project imports, cached, and kept by the prefilter."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from amplint.amp import FileFacts
from amplint.cache import Cache
from amplint.config import ConfigError, parse_table
from amplint.engine import lint_text
from amplint.jobs import Job, run_jobs
from amplint.positions import Positions
from amplint.project.context import ProjectIndex
from amplint.project.query import ProjectView
from amplint.project.phase import summarize_cached, with_project_context
from amplint.project.summarize import summarize_text
from amplint.selection import may_have_findings
from amplint.settings import Settings

PROJECT = Path(__file__).resolve().parents[1] / "fixtures" / "projects" / "helper_ckpt"
AMP006 = Settings(select=("AMP006",), root=str(PROJECT))


def _jobs(root: Path, settings: Settings, cache_dir: str | None = None) -> list[Job]:
    return [Job(str(path), settings, display=path.name, cache_dir=cache_dir) for path in sorted(root.glob("*.py"))]


def _facts_with_project(path: Path, settings: Settings) -> FileFacts:
    (job,) = [with_project_context(j) for j in _jobs(path.parent, settings) if j.path == str(path)]
    text = path.read_text()
    module = cst.parse_module(text)
    facts = FileFacts(module, Positions(module), path.name, settings)
    facts.project = ProjectView(facts, summarize_text(text), job.project)
    return facts


def test_summary_records_what_each_helper_does():
    summary = summarize_text((PROJECT / "utils.py").read_text())
    save, load, clip = (summary.function(n) for n in ("save_checkpoint", "load_checkpoint", "clip_gradients"))
    assert save.saves_optimizer and not save.saves_scaler and save.saved_params == ("epoch", "model", "optimizer")
    assert save.saves[0].keys == ("model", "optimizer", "epoch") and save.saves[0].complete
    assert load.restores_optimizer and load.restores_scaler and load.scaler_params == ("scaler",)
    assert clip.unscales and clip.clips and not clip.steps
    engine = summarize_text((PROJECT / "engine.py").read_text()).function("train_one_epoch")
    assert engine.scaled_backward and engine.steps and engine.updates and not engine.unscales


def test_calls_resolve_to_helpers_in_other_modules():
    facts = _facts_with_project(PROJECT / "train.py", AMP006)
    by_name = {site.func_text: site for site in facts.calls}
    save = facts.project.callee(by_name["save_checkpoint"])
    assert (save.module, save.function.name) == ("utils.py", "save_checkpoint")
    epoch = facts.project.callee(by_name["engine.train_one_epoch"])
    assert (epoch.module, epoch.function.name) == ("engine.py", "train_one_epoch")
    assert facts.project.call_reaches(by_name["engine.train_one_epoch"], "steps")
    assert not facts.project.call_reaches(by_name["engine.train_one_epoch"], "saves_scaler")
    engine_facts = _facts_with_project(PROJECT / "engine.py", AMP006)
    (clip,) = [s for s in engine_facts.calls if s.func_text == "clip_gradients"]
    assert engine_facts.project.call_reaches(clip, "unscales")


def test_relative_and_package_imports_resolve(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "io.py").write_text("import torch\n\ndef save(model, optimizer, path):\n    torch.save({'optimizer': optimizer.state_dict()}, path)\n")
    (package / "main.py").write_text("from .io import save\nfrom . import io\n")
    index = ProjectIndex(tmp_path, load=lambda p: summarize_text(Path(p).read_text()))
    context = index.context_for(str(package / "main.py"), summarize_text((package / "main.py").read_text()))
    assert {(t.local, t.module, t.attribute) for t in context.targets} == {("save", "io.py", "save"), ("io", "io.py", None)}


def test_a_helper_the_prefilter_skips_is_still_summarised_and_followed(tmp_path):
    (tmp_path / "ckpt.py").write_text(
        "import torch\n\n\ndef save_checkpoint(model, optimizer, epoch, path):\n"
        "    torch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict()}, path)\n"
    )
    shutil.copy(PROJECT / "train.py", tmp_path / "train.py")
    (tmp_path / "train.py").write_text((tmp_path / "train.py").read_text().replace("from utils import load_checkpoint, save_checkpoint", "from ckpt import save_checkpoint\nload_checkpoint = None"))
    settings = Settings(select=("AMP006",), root=str(tmp_path))
    assert not may_have_findings((tmp_path / "ckpt.py").read_bytes(), settings, "ckpt.py")
    results = {r.filename: r for r in run_jobs(_jobs(tmp_path, settings), 1)}
    assert results["ckpt.py"].skipped
    assert [(f.code, f.location.row) for f in results["train.py"].findings] == [("AMP006", 20)]  # the import took two lines
    assert "`save_checkpoint` in ckpt.py" in results["train.py"].findings[0].message


def test_single_file_and_no_project_modes_see_only_the_file():
    text = (PROJECT / "train.py").read_text()
    assert lint_text(text, "train.py", AMP006).findings == []  # stdin-style: the helpers are elsewhere
    isolated = Settings(select=("AMP006",), root=str(PROJECT), project_analysis=False)
    results = {r.filename: r for r in run_jobs(_jobs(PROJECT, isolated), 1)}
    assert results["train.py"].findings == []
    results = {r.filename: r for r in run_jobs(_jobs(PROJECT, AMP006), 1)}
    assert [f.location.row for f in results["train.py"].findings] == [16, 19]


def test_every_planted_finding_of_the_fixture_project_and_nothing_else():
    results = run_jobs(_jobs(PROJECT, AMP006), 1)
    for result in results:
        text = (PROJECT / result.filename).read_text().splitlines()
        planted = [n for n, line in enumerate(text, start=1) if "# expect: AMP006" in line]
        assert sorted(f.noqa_row for f in result.findings) == planted, result.filename


def test_a_scaler_key_no_imported_save_writes_is_reported_across_files():
    (result,) = [r for r in run_jobs(_jobs(PROJECT, AMP006), 1) if r.filename == "finetune.py"]
    unwritten = [f for f in result.findings if f.location.row == 13]
    assert len(unwritten) == 1 and '`save_checkpoint` at utils.py:10' in unwritten[0].message
    assert lint_text((PROJECT / "finetune.py").read_text(), "finetune.py", AMP006).findings == []


def test_summaries_are_cached_by_content_and_results_by_what_the_imports_reach(tmp_path):
    cache_dir = tmp_path / "cache"
    cache = Cache(cache_dir)
    cache.ensure()
    text = (PROJECT / "utils.py").read_text()
    summary = summarize_cached(text, str(cache_dir))
    assert cache.get_summary(text) == summary
    assert cache.get_summary(text + "\n# edited\n") is None
    (entry,) = cache.dir.glob("*.summary")
    entry.write_text('{"key": "0", "summary": {}}')
    assert cache.get_summary(text) is None  # a foreign or corrupt entry is a miss

    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    settings = Settings(select=("AMP006",), root=str(project))
    first = {r.filename: r for r in run_jobs(_jobs(project, settings, str(cache_dir)), 1)}
    assert len(first["train.py"].findings) == 2
    # The helper learns to save the scaler: train.py's cached result must not be reused.
    utils = project / "utils.py"
    utils.write_text(utils.read_text().replace(
        "def save_checkpoint(model, optimizer, epoch, output_dir):\n",
        "def save_checkpoint(model, optimizer, epoch, output_dir, scaler=None):\n",
    ).replace('"epoch": epoch}\n', '"epoch": epoch}\n    if scaler is not None:\n        state["scaler"] = scaler.state_dict()\n'))
    again = {r.filename: r for r in run_jobs(_jobs(project, settings, str(cache_dir)), 1)}
    messages = [f.message for f in again["train.py"].findings]
    assert len(messages) == 2 and "without its `scaler` argument" in messages[1]


def test_project_analysis_key_and_no_project_flag(tmp_path):
    assert parse_table({"project-analysis": False}, "amplint.toml", None).project_analysis is False
    assert parse_table({}, "amplint.toml", None).project_analysis is True
    with pytest.raises(ConfigError, match="'project-analysis' must be true or false"):
        parse_table({"project-analysis": "no"}, "amplint.toml", None)

    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)

    def run(*options):
        return subprocess.run(
            [sys.executable, "-m", "amplint", "check", "--no-cache", "--select", "AMP006", "--output-format", "concise", *options, "train.py"],
            capture_output=True, text=True, cwd=project, timeout=120,
        )

    assert run().stdout.count("AMP006") == 2
    assert run("--no-project").returncode == 0
    (project / "amplint.toml").write_text("project-analysis = false\n")
    assert run().returncode == 0


def test_a_checkpointer_subclass_and_a_forwarding_saver_in_other_modules(tmp_path):
    # dinov2: a subclass of fvcore's Checkpointer in the package, built with the optimizer only;
    # icefall: the recipe's own save_checkpoint hands its parameters to the library's, whose
    # entries are ``x.state_dict() if x is not None else None``; the call leaves the scaler out.
    package = tmp_path / "lib"
    package.mkdir()
    (package / "__init__.py").write_text(
        "import torch\nfrom fvcore.common.checkpoint import Checkpointer\n\n\n"
        "class RankCheckpointer(Checkpointer):\n    def save(self, name, **extra):\n"
        "        torch.save({k: v.state_dict() for k, v in self.checkpointables.items()}, name)\n"
    )
    (package / "checkpoint.py").write_text(
        "import torch\n\n\ndef save_checkpoint(filename, model, optimizer=None, scaler=None):\n"
        "    torch.save({'model': model.state_dict(),\n"
        "                'optimizer': optimizer.state_dict() if optimizer is not None else None,\n"
        "                'grad_scaler': scaler.state_dict() if scaler is not None else None}, filename)\n"
    )
    (tmp_path / "train.py").write_text(
        "import torch\nfrom lib import RankCheckpointer\nfrom lib.checkpoint import save_checkpoint as save_checkpoint_impl\n\n\n"
        "def save_checkpoint(out, model, optimizer=None, scaler=None):\n"
        "    save_checkpoint_impl(f'{out}/last.pt', model=model, optimizer=optimizer, scaler=scaler)\n\n\n"
        "def run(cfg, model, loader):\n"
        "    optimizer = torch.optim.AdamW(model.parameters())\n"
        "    scaler = torch.amp.GradScaler('cuda', enabled=cfg.fp16)\n"
        "    checkpointer = RankCheckpointer(model, cfg.out, optimizer=optimizer)\n"
        "    for batch in loader:\n"
        "        with torch.autocast('cuda', enabled=cfg.fp16):\n"
        "            loss = model(batch)\n"
        "        scaler.scale(loss).backward()\n"
        "        scaler.step(optimizer)\n"
        "        scaler.update()\n"
        "    save_checkpoint(cfg.out, model, optimizer=optimizer)\n"
        "    checkpointer.save('last')\n\n\n"
        "def finish(cfg, model, optimizer, scaler):\n"
        "    scaler.update()\n"
        "    save_checkpoint(cfg.out, model, optimizer=optimizer, scaler=scaler)\n"
        "    RankCheckpointer(model, cfg.out, optimizer=optimizer, scaler=scaler).save('final')\n"
    )
    settings = Settings(select=("AMP006",), root=str(tmp_path))
    results = {r.filename: r for r in run_jobs(_jobs(tmp_path, settings), 1)}
    found = results["train.py"].findings
    assert [f.location.row for f in found] == [13, 20]
    assert "`RankCheckpointer` in lib/__init__.py" in found[0].message
    assert "`save_checkpoint` (line 6) is called without its `scaler` argument" in found[1].message


def test_an_autocast_helper_of_another_module_gives_its_dtype(tmp_path):
    # icefall: ``from icefall.utils import torch_autocast`` (a @contextmanager yielding inside
    # torch.amp.autocast(device_type=device_type, **kwargs)); an LM trainer with no GradScaler at
    # all backpropagates and steps under it. The file mentions no scaler: it asks about the
    # import because it is named like an autocast helper.
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "__init__.py").write_text("")
    (tmp_path / "lib" / "utils.py").write_text(
        "from contextlib import contextmanager\n\nimport torch\n\n\n@contextmanager\n"
        "def torch_autocast(device_type='cuda', **kwargs):\n"
        "    with torch.amp.autocast(device_type=device_type, **kwargs):\n        yield\n\n\n"
        "@contextmanager\ndef bf16_autocast(enabled=True):\n"
        "    with torch.amp.autocast('cuda', dtype=torch.bfloat16, enabled=enabled):\n        yield\n"
    )
    (tmp_path / "train_lm.py").write_text(
        "import torch\nfrom lib.utils import bf16_autocast, torch_autocast\n\n\n"
        "def train_one_epoch(params, model, optimizer, loader):\n"
        "    for batch in loader:\n"
        "        with torch_autocast(enabled=params.use_fp16):\n            loss = model(batch)\n"
        "        loss.backward()\n        optimizer.step()\n        optimizer.zero_grad()\n\n\n"
        "def train_bf16(model, optimizer, loader):\n"
        "    for batch in loader:\n"
        "        with bf16_autocast():\n            loss = model(batch)\n"
        "        loss.backward()\n        optimizer.step()\n"
    )
    settings = Settings(select=("AMP013",), root=str(tmp_path))
    results = {r.filename: r for r in run_jobs(_jobs(tmp_path, settings), 1)}
    assert [(f.code, f.location.row) for f in results["train_lm.py"].findings] == [("AMP013", 9)]
    isolated = Settings(select=("AMP013",), root=str(tmp_path), project_analysis=False)
    results = {r.filename: r for r in run_jobs(_jobs(tmp_path, isolated), 1)}
    assert results["train_lm.py"].findings == []  # without the project the dtype is not known


STARS = Path(__file__).resolve().parents[1] / "fixtures" / "projects" / "star_imports"


def test_a_name_only_a_star_import_binds_resolves_as_that_module_binds_it():
    # torch-ngp: tensoRF/utils.py gets torch only from ``from nerf.utils import *``.
    settings = Settings(select=("AMP001",), root=str(STARS))
    jobs = [Job(str(path), settings, display=path.relative_to(STARS).as_posix()) for path in sorted(STARS.rglob("*.py"))]
    results = {r.filename: r for r in run_jobs(jobs, 1)}
    for name, result in results.items():
        lines = (STARS / name).read_text().splitlines()
        planted = [n for n, line in enumerate(lines, start=1) if "# expect: AMP001" in line]
        assert sorted(f.noqa_row for f in result.findings) == planted, name
    assert all(f.fix is not None for f in results["apps/field_trainer.py"].findings)
    isolated = Settings(select=("AMP001",), root=str(STARS), project_analysis=False)
    (alone,) = run_jobs([Job(str(STARS / "apps" / "field_trainer.py"), isolated, display="f.py")], 1)
    assert alone.findings == []  # one file alone cannot show what the star import binds


def test_what_a_star_import_binds_is_read_from_the_module(tmp_path):
    from amplint.project.stars import star_exports

    module = tmp_path / "m.py"
    module.write_text("import os\nimport torch.nn as nn\nimport torch.distributed\nfrom torch.utils.data import Dataset\n"
                      "from . import sibling\nimport numpy as _np\nimport yaml\nyaml = None\n")
    assert star_exports(module) == [["Dataset", "torch.utils.data.Dataset"], ["nn", "torch.nn"], ["os", "os"], ["torch", "torch"]]
    module.write_text("import torch\n__all__ = ['torch']\nimport os\n")
    assert star_exports(module) == [["torch", "torch"]]
    module.write_text("import torch\n__all__ = names()\n")
    assert star_exports(module) is None
    module.write_text("import torch\nfrom other import *\n")
    assert star_exports(module) is None


def test_a_cached_result_is_not_reused_once_the_star_imported_module_changes(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(STARS, project)
    cache_dir = str(tmp_path / "cache")
    settings = Settings(select=("AMP001",), root=str(project))
    target = project / "apps" / "field_trainer.py"

    def findings():
        (result,) = run_jobs([Job(str(target), settings, display="field_trainer.py", cache_dir=cache_dir)], 1)
        return len(result.findings)

    assert findings() == 2 and findings() == 2
    trainer = project / "base" / "trainer.py"
    trainer.write_text(trainer.read_text().replace("import torch\n", "try:\n    import torch\nexcept ImportError:\n    torch = None\n", 1))
    assert findings() == 0


def test_a_scaler_key_a_save_of_the_file_writes_is_settled_without_reading_the_imports(tmp_path, monkeypatch):
    from amplint.project.query import ProjectView

    for path in PROJECT.glob("*.py"):
        shutil.copy(path, tmp_path / path.name)
    finetune = tmp_path / "finetune.py"
    finetune.write_text(finetune.read_text() + (
        '    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), '
        '"scaler": scaler.state_dict()}, path)\n'))
    read: list[str] = []
    imported_saves = ProjectView.imported_saves

    def recording(self):
        read.append(self.facts.path)
        yield from imported_saves(self)

    monkeypatch.setattr(ProjectView, "imported_saves", recording)
    settings = Settings(select=("AMP006",), root=str(tmp_path))
    (result,) = [r for r in run_jobs(_jobs(tmp_path, settings), 1) if r.filename == "finetune.py"]
    assert 13 not in [f.location.row for f in result.findings]  # the file's own save writes "scaler"
    assert not [path for path in read if path.endswith("finetune.py")]
    # Without that save the imports are read, and the key no imported save writes is reported.
    (tmp_path / "finetune.py").write_text((PROJECT / "finetune.py").read_text())
    (result,) = [r for r in run_jobs(_jobs(tmp_path, settings), 1) if r.filename == "finetune.py"]
    assert 13 in [f.location.row for f in result.findings]
    assert [path for path in read if path.endswith("finetune.py")]
