"""DeepSpeed configs given as JSON files of the project, read through the project pass (AMP024, AMP027).

``deepspeed.initialize(..., config="configs/ds_fp16.json")`` hands DeepSpeed a path that it opens
from the working directory and reads as (H)JSON (deepspeed 0.19.8 ``deepspeed/__init__.py:534-535``,
``runtime/config.py:441-444``). The linter reads the file only through the project pass (a
``config`` question of :class:`~amplint.project.deferred.DeferredContext`), so a cache entry records
it and an edit of the JSON file invalidates the cached result of the script that names it; a file
linted on its own (``lint_source``, ``--no-project``) reads nothing and stays silent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from amplint.api import lint_source
from amplint.cache import Cache
from amplint.jobs import Job, process_file, run_jobs
from amplint.project.asking import asks_about_configs
from amplint.project.configs import config_precision, precision_of
from amplint.project.deferred import DeferredContext
from amplint.project.phase import with_project_context
from amplint.settings import Settings

PROJECT = Path(__file__).resolve().parents[1] / "fixtures" / "projects" / "deepspeed_json"
CODES = ("AMP024", "AMP027")


def _settings(root: Path, **extra) -> Settings:
    return Settings(select=CODES, root=str(root), **extra)


def _run(root: Path, settings: Settings) -> dict[str, list[tuple[str, int]]]:
    jobs = [Job(str(p), settings, display=p.relative_to(root).as_posix()) for p in sorted(root.rglob("*.py"))]
    return {r.filename: sorted((f.code, f.noqa_row) for f in r.findings) for r in run_jobs(jobs, 1)}


def _planted(root: Path, name: str) -> list[tuple[str, int]]:
    lines = (root / name).read_text().splitlines()
    return sorted((line.split("# expect: ")[1].strip(), n) for n, line in enumerate(lines, start=1) if "# expect: " in line)


def test_configs_named_by_json_paths_are_read_from_the_project():
    results = _run(PROJECT, _settings(PROJECT))
    assert set(results) == {"train/finetune_lm.py", "train/distill.py", "train/near_misses.py", "tools/export_fp32.py"}
    for name, found in results.items():
        assert found == _planted(PROJECT, name), name
    assert results["train/near_misses.py"] == [] and results["tools/export_fp32.py"] == []


def test_without_the_project_nothing_is_read_and_nothing_is_reported(monkeypatch):
    import amplint.project.configs as configs

    monkeypatch.setattr(configs, "config_precision", lambda *a: pytest.fail("a config file was read"))
    assert all(found == [] for found in _run(PROJECT, _settings(PROJECT, project_analysis=False)).values())
    for name in ("train/finetune_lm.py", "train/distill.py"):
        assert lint_source((PROJECT / name).read_text(), name, settings={"select": list(CODES)}) == []


def test_a_file_that_only_mentions_deepspeed_and_a_json_file_asks_but_reads_nothing():
    job = with_project_context(Job(str(PROJECT / "tools" / "export_fp32.py"), _settings(PROJECT)))
    assert isinstance(job.project, DeferredContext) and not job.project.imports
    assert process_file(job).findings == [] and not job.project.read
    assert asks_about_configs(b'import deepspeed\nconfig = "ds.json"\n')
    assert not asks_about_configs(b'import deepspeed\nconfig = args.deepspeed_config\n')
    assert not asks_about_configs(b'import json\nconfig = json.load(open("ds.json"))\n')


def _lint_cached(root: Path, cache_dir: Path, name: str = "train/finetune_lm.py"):
    settings = _settings(root)
    job = with_project_context(Job(str(root / name), settings, display=name, cache_dir=str(cache_dir)))
    return job, process_file(job)


def _lookup(root: Path, cache_dir: Path, name: str = "train/finetune_lm.py"):
    settings = _settings(root)
    job = with_project_context(Job(str(root / name), settings, display=name))
    return Cache(cache_dir).get((root / name).read_text(), name, settings, job.project)


@pytest.fixture
def cached(tmp_path):
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root)
    cache_dir = tmp_path / "cache"
    Cache(cache_dir).ensure()
    job, result = _lint_cached(root, cache_dir)
    assert [f.code for f in result.findings] == ["AMP027"]
    return root, cache_dir, job


def test_the_cache_entry_records_the_config_question(cached):
    root, cache_dir, job = cached
    assert job.project.questions == {("config", "configs/ds_fp16.json"): "fp16"}
    (entry,) = Cache(cache_dir).dir.glob("*.json")
    assert json.loads(entry.read_text())["project"]["questions"] == [["config", "configs/ds_fp16.json"]]
    assert _lookup(root, cache_dir) is not None


def test_an_edit_that_keeps_the_precision_keeps_the_entry(cached):
    root, cache_dir, _ = cached
    config = root / "configs" / "ds_fp16.json"
    config.write_text(config.read_text().replace('"lr": 2e-5', '"lr": 1e-5'))
    assert _lookup(root, cache_dir) is not None


def test_an_edit_of_the_json_file_invalidates_the_cached_result(cached):
    root, cache_dir, _ = cached
    config = root / "configs" / "ds_fp16.json"
    config.write_text(config.read_text().replace('"fp16"', '"bf16"'))
    assert _lookup(root, cache_dir) is None
    _, again = _lint_cached(root, cache_dir)
    assert again.findings == []


def test_a_config_that_appears_nearer_the_script_invalidates_the_cached_result(cached):
    root, cache_dir, _ = cached
    (root / "train" / "configs" / "ds_fp16.json").write_text('{"bf16": {"enabled": true}}')
    assert _lookup(root, cache_dir) is None  # the candidates now disagree: unknown
    _, again = _lint_cached(root, cache_dir)
    assert again.findings == []


# -- reading one config file


def _config(tmp_path: Path, text: str, at: str = "configs/ds.json") -> Path:
    path = tmp_path / at
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("text, precision", [
    ('{"fp16": {"enabled": true}}', "fp16"),
    ('{"bf16": {"enabled": true}, "fp16": {"enabled": false}}', "bf16"),
    ('{"bfloat16": {"enabled": true}}', "bf16"),  # the old key DeepSpeed still reads
    ('\ufeff{"fp16": {"enabled": true}}', "fp16"),
    ('{"train_batch_size": 8}', None),  # neither: fp32
    ('{"fp16": {"enabled": "auto"}}', None),
    ('{"train_batch_size": "auto", "fp16": {"enabled": true}}', None),  # written for the HF integration
    ('{"fp16": {"enabled": 1}}', None),
    ('{"fp16": {"enabled": true}, "bf16": {"enabled": true}}', None),  # DeepSpeed refuses it
    ('{"fp16": {"enabled": true}, "fp16": {"enabled": false}}', None),  # a repeated key: refused too
    ('{"fp16": true}', None),
    ('{// hjson\n"fp16": {"enabled": true}}', None),
    ('[{"fp16": {"enabled": true}}]', None),
    ('{"fp16": {"enabled": tru', None),
    # DeepSpeed's own torch.autocast: float16 without ZeRO builds the engine's GradScaler
    ('{"torch_autocast": {"enabled": true, "dtype": "torch.float16"}}', "torch_autocast-fp16"),
    ('{"torch_autocast": {"enabled": true, "dtype": "half"}, "zero_optimization": {"stage": 0}}', "torch_autocast-fp16"),
    ('{"torch_autocast": {"enabled": true, "dtype": "fp16"}, "zero_optimization": {"offload_optimizer": null}}',
     "torch_autocast-fp16"),  # the stage defaults to 0
    ('{"torch_autocast": {"enabled": true, "dtype": "torch.float16"}, "zero_optimization": {"stage": 1}}', None),
    ('{"torch_autocast": {"enabled": true, "dtype": "torch.float16"}, "zero_optimization": {"stage": "0"}}', None),
    ('{"torch_autocast": {"enabled": true, "dtype": "torch.float16"}, "zero_optimization": true}', None),
    ('{"torch_autocast": {"enabled": true, "dtype": "bfloat16"}}', None),
    ('{"torch_autocast": {"enabled": true}}', None),  # the device's default dtype
    ('{"torch_autocast": {"enabled": false, "dtype": "torch.float16"}}', None),  # fp32
    ('{"torch_autocast": {"enabled": true, "dtype": "torch.float16"}, "fp16": {"enabled": true}}', None),
    ('{"torch_autocast": {"enabled": true, "dtype": "torch.float16"}, "bf16": {"enabled": true}}', None),
])
def test_what_a_config_file_enables(tmp_path, text, precision):
    _config(tmp_path, text)
    assert config_precision(str(tmp_path / "train.py"), "configs/ds.json", tmp_path) == precision


def test_a_path_is_looked_for_beside_the_script_then_in_each_folder_up_to_the_root(tmp_path):
    script = str(tmp_path / "src" / "jobs" / "train.py")
    assert config_precision(script, "configs/ds.json", tmp_path) is None  # none exists
    _config(tmp_path, '{"fp16": {"enabled": true}}')
    assert config_precision(script, "configs/ds.json", tmp_path) == "fp16"
    _config(tmp_path, '{"fp16": {"enabled": true}}', "src/jobs/configs/ds.json")
    assert config_precision(script, "configs/ds.json", tmp_path) == "fp16"  # they agree
    _config(tmp_path, '{"bf16": {"enabled": true}}', "src/configs/ds.json")
    assert config_precision(script, "configs/ds.json", tmp_path) is None  # they disagree


@pytest.mark.parametrize("literal", ["/etc/ds.json", "~/ds.json", "../outside.json", "", "a\x00.json"])
def test_a_path_outside_the_project_is_not_read(tmp_path, literal):
    root = tmp_path / "project"
    _config(tmp_path, '{"fp16": {"enabled": true}}', "outside.json")
    assert config_precision(str(root / "train.py"), literal, root) is None


def test_precision_of_a_parsed_config():
    assert precision_of({"fp16": {"enabled": True}}) == "fp16"
    assert precision_of({"bf16": None, "bfloat16": {"enabled": True}}) == "bf16"
    assert precision_of({}) == "fp32"
    assert precision_of("ds.json") is None
    assert precision_of({"torch_autocast": {"enabled": True, "dtype": "float16"}}) == "torch_autocast-fp16"
    assert precision_of({"torch_autocast": {"enabled": True, "dtype": "float16"}, "zero_optimization": {"stage": False}}) is None


# -- which spellings name the file, and which changes make its precision unknown

SCRIPT = '''\
import json

import deepspeed

CONFIG_PATH = "configs/ds.json"


def train(model, loader, args, patch, logger):
{setup}
    engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), {keyword}=cfg)
    for x in loader:
        engine(x).mean().backward()
        optimizer.step()
'''


@pytest.mark.parametrize("setup, reported", [
    ('cfg = "configs/ds.json"', True),
    ("cfg = CONFIG_PATH", True),
    ("cfg = json.load(open(CONFIG_PATH))", True),
    ('cfg = json.loads(open("configs/ds.json").read())', True),
    ('with open("configs/ds.json", encoding="utf-8") as handle:\n        cfg = json.load(handle)', True),
    ('cfg = json.load(open("configs/ds.json"))\n    cfg["train_batch_size"] = 8\n    logger.info(json.dumps(cfg))', True),
    ('cfg = json.load(open("configs/ds.json"))\n    assert "bf16" not in cfg\n    print(cfg["fp16"])', True),
    ('cfg = json.load(open("configs/ds.json"))\n    if cfg["fp16"]["enabled"]:\n        print("fp16")', True),
    ('cfg = json.load(open("configs/ds.json"))\n    size = cfg.get("train_batch_size")', True),
    # ZeRO does not change what "fp16" does to a plain backward
    ('cfg = json.load(open("configs/ds.json"))\n    cfg["zero_optimization"]["stage"] = args.stage', True),
    ("cfg = args.deepspeed_config", False),
    ('cfg = "configs/ds.yaml"', False),
    ('cfg = "configs/missing.json"', False),
    ('cfg = json.load(open(args.config))', False),
    ('cfg = json.load(open("configs/ds.json"))\n    cfg["fp16"]["enabled"] = args.fp16', False),
    ('cfg = json.load(open("configs/ds.json"))\n    cfg.update(args.overrides)', False),
    ('cfg = json.load(open("configs/ds.json"))\n    del cfg["fp16"]', False),
    ('cfg = json.load(open("configs/ds.json"))\n    cfg["torch_autocast"] = args.autocast', False),
    ('cfg = json.load(open("configs/ds.json"))\n    patch(cfg)', False),
    ('cfg = json.load(open("configs/ds.json"))\n    section = cfg["fp16"]\n    section["enabled"] = False', False),
    ('cfg = json.load(open("configs/ds.json"))\n    section = cfg.get("fp16")', False),
    ('cfg = json.load(open("configs/ds.json"))\n    alias = cfg', False),
    ('cfg = json.load(open("configs/ds.json")) if args.fp16 else {}', False),
    ('open = None\n    cfg = json.load(open("configs/ds.json"))', False),
])
@pytest.mark.parametrize("keyword", ["config", "config_params"])
def test_how_the_script_names_and_treats_the_config(tmp_path, setup, reported, keyword):
    _config(tmp_path, '{"train_batch_size": 16, "fp16": {"enabled": true}}')
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(setup="    " + setup, keyword=keyword))
    (result,) = run_jobs([Job(str(script), Settings(select=("AMP027",), root=str(tmp_path)), display="train.py")], 1)
    assert [f.code for f in result.findings] == (["AMP027"] if reported else [])


AUTOCAST_SCRIPT = SCRIPT.replace("        engine(x).mean().backward()\n", "        engine.backward(engine(x).mean())\n")


@pytest.mark.parametrize("setup, reported", [
    ('cfg = "configs/ds.json"', True),
    ('cfg = json.load(open("configs/ds.json"))\n    cfg["train_batch_size"] = 8', True),
    ('cfg = json.load(open("configs/ds.json"))\n    cfg["zero_optimization"] = {"stage": args.stage}', False),
    ('cfg = json.load(open("configs/ds.json"))\n    cfg.get("zero_optimization")["stage"] = 2', False),
    ('cfg = json.load(open("configs/ds.json"))\n    cfg["torch_autocast"]["dtype"] = args.dtype', False),
])
def test_a_float16_torch_autocast_file_and_the_zero_stage_the_script_may_set(tmp_path, setup, reported):
    """A "torch_autocast" config in float16 without ZeRO: ``optimizer.step()`` after
    ``engine.backward(loss)`` is reported, unless the script may set a ZeRO stage (then the ZeRO
    optimizer owns the GradScaler) or change the autocast section."""
    _config(tmp_path, '{"train_batch_size": 16, "torch_autocast": {"enabled": true, "dtype": "torch.float16"}}')
    script = tmp_path / "train.py"
    script.write_text(AUTOCAST_SCRIPT.format(setup="    " + setup, keyword="config"))
    (result,) = run_jobs([Job(str(script), Settings(select=("AMP027",), root=str(tmp_path)), display="train.py")], 1)
    assert [(f.code, f.location.row) for f in result.findings] == ([("AMP027", 13 + setup.count("\n"))] if reported else [])
