"""The project is read only when a rule asks about an asked import, and the cache knows whether it was.

A file that holds a scaler and calls imported helpers with training state asks about those
imports, but most such files never need the answer (no scaler is in scope where the helper is
called, or the class it builds cannot build a GradScaler). Their lint must not read the
project, their cache entries must not depend on it, and files whose lint did read it must still
miss when the project changes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amplint.cache import Cache
from amplint.jobs import Job, process_file
from amplint.project.deferred import DeferredContext
from amplint.project.phase import with_project_context
from amplint.settings import Settings

TRAIN_WITH_WRAPPER = '''\
import torch

from utils import NativeScalerWithGradNormCount


def train(model, optimizer, path):
    loss_scaler = NativeScalerWithGradNormCount()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
'''

WRAPPER = '''\
import torch


class NativeScalerWithGradNormCount:
    def __init__(self):
        self._scaler = torch.amp.{name}("cuda")

    def __call__(self, loss, optimizer):
        self._scaler.scale(loss).backward()
        self._scaler.step(optimizer)
        self._scaler.update()
'''

NOT_A_SCALER = '''\
class NativeScalerWithGradNormCount:
    """Multiplies the loss by a constant before the backward pass."""

    def __init__(self, factor=2.0):
        self.factor = factor

    def __call__(self, loss, optimizer):
        (loss * self.factor).backward()
        optimizer.step()
'''

# A scaler in scope, but the helper is called where none is: the helper's summary cannot matter.
HELPER_CALLED_WITHOUT_SCALER = '''\
import torch

from utils import save_checkpoint


def export(model, optimizer, path):
    save_checkpoint(model, optimizer, path)


def train(model, optimizer, loader):
    scaler = torch.amp.GradScaler("cuda")
    for batch in loader:
        scaler.scale(model(batch)).backward()
        scaler.step(optimizer)
        scaler.update()
'''

SAVER = '''\
import torch


def save_checkpoint(model, optimizer, path):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
'''


def _project(tmp_path: Path, train: str, utils: str) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "train.py").write_text(train, encoding="utf-8")
    (root / "utils.py").write_text(utils, encoding="utf-8")
    return root


def _lint(root: Path, cache_dir: Path | None = None):
    settings = Settings(select=("AMP006",), root=str(root))
    job = with_project_context(Job(str(root / "train.py"), settings, display="train.py",
                                   cache_dir=str(cache_dir) if cache_dir else None))
    return job, process_file(job)


def test_a_project_class_that_builds_a_grad_scaler_is_a_scaler_in_scope(tmp_path):
    root = _project(tmp_path, TRAIN_WITH_WRAPPER, WRAPPER.format(name="GradScaler"))
    job, result = _lint(root)
    assert isinstance(job.project, DeferredContext) and job.project.read
    (finding,) = result.findings
    assert finding.code == "AMP006" and "loss_scaler" in finding.message


def test_an_identifier_spelled_in_another_unicode_form_still_names_grad_scaler(tmp_path):
    # Python reads identifiers in NFKC form: a fullwidth G still calls torch.amp.GradScaler.
    root = _project(tmp_path, TRAIN_WITH_WRAPPER, WRAPPER.format(name="\uff27radScaler"))
    _, result = _lint(root)
    assert [f.code for f in result.findings] == ["AMP006"]


def test_a_class_whose_module_never_spells_grad_scaler_is_not_read_from_the_project(tmp_path):
    root = _project(tmp_path, TRAIN_WITH_WRAPPER, NOT_A_SCALER)
    job, result = _lint(root)
    assert result.findings == []
    assert isinstance(job.project, DeferredContext)
    assert ("build", "NativeScalerWithGradNormCount") in job.project.questions  # the helper's text was looked at...
    assert ("all", "") not in job.project.questions  # ...but no module was summarised


def test_a_helper_called_where_no_scaler_is_in_scope_summarises_nothing(tmp_path, monkeypatch):
    root = _project(tmp_path, HELPER_CALLED_WITHOUT_SCALER, SAVER)
    summarised = []
    import amplint.project.phase as phase

    real = phase.summarize_path
    monkeypatch.setattr(phase, "summarize_path",
                        lambda path, cache_dir=None, only=None: summarised.append(path) or real(path, cache_dir, only))
    job, result = _lint(root)
    assert result.findings == []
    assert isinstance(job.project, DeferredContext)
    assert ("all", "") not in job.project.questions
    assert summarised == []


def _entry_path(cache_dir: Path) -> Path:
    (path,) = list(Cache(cache_dir).dir.glob("*.json"))
    return path


def _cached(tmp_path: Path, train: str, utils: str):
    """A project linted once with a cache: (root, cache folder, the result)."""
    root = _project(tmp_path, train, utils)
    cache_dir = tmp_path / "cache"
    Cache(cache_dir).ensure()
    _, result = _lint(root, cache_dir)
    return root, cache_dir, result


def _lookup(root: Path, cache_dir: Path):
    """What the cache holds for train.py as the project now stands (``None``: a miss)."""
    settings = Settings(select=("AMP006",), root=str(root))
    job = with_project_context(Job(str(root / "train.py"), settings, display="train.py"))
    return Cache(cache_dir).get((root / "train.py").read_text(), "train.py", settings, job.project)


@pytest.mark.parametrize("train, utils, summarises", [
    (HELPER_CALLED_WITHOUT_SCALER, SAVER, False),
    (TRAIN_WITH_WRAPPER, WRAPPER.format(name="GradScaler"), True),
])
def test_a_cache_entry_depends_on_a_helper_module_only_when_the_lint_summarised_it(tmp_path, train, utils, summarises):
    root, cache_dir, first = _cached(tmp_path, train, utils)
    recorded = json.loads(_entry_path(cache_dir).read_text())["project"]
    assert any(kind in ("one", "all") for kind, _ in recorded["questions"]) is summarises
    # An edit to the helper module that changes none of the cheap answers: an entry that
    # summarised the project misses, one that did not hits.
    (root / "utils.py").write_text(utils + "\n\ndef unrelated():\n    return 1\n", encoding="utf-8")
    assert (_lookup(root, cache_dir) is None) is summarises
    _, again = _lint(root, cache_dir)
    assert [f.message for f in again.findings] == [f.message for f in first.findings]


def test_a_project_file_that_appears_where_an_import_looked_invalidates_the_entry(tmp_path):
    # ``import torch`` was looked for in the project and not found: a local torch.py changes that.
    root, cache_dir, _ = _cached(tmp_path, HELPER_CALLED_WITHOUT_SCALER, SAVER)
    assert ["reach", "torch"] in json.loads(_entry_path(cache_dir).read_text())["project"]["questions"]
    assert _lookup(root, cache_dir) is not None
    (root / "torch.py").write_text("def save(obj, path):\n    pass\n", encoding="utf-8")
    assert _lookup(root, cache_dir) is None


def test_a_cached_result_that_read_the_project_misses_once_the_helper_learns_to_build_a_scaler(tmp_path):
    root, cache_dir, first = _cached(tmp_path, TRAIN_WITH_WRAPPER, NOT_A_SCALER)
    assert first.findings == []
    (root / "utils.py").write_text(WRAPPER.format(name="GradScaler"), encoding="utf-8")
    _, again = _lint(root, cache_dir)
    assert [f.code for f in again.findings] == ["AMP006"]


_MISSING = object()


@pytest.mark.parametrize("record", [
    _MISSING,  # an entry of the format before the project record
    "611ade1b431f2d94",  # a bare digest
    {"questions": [["reach"]], "digest": "0"},
    {"questions": [["reach", 1]], "digest": "0"},
    {"questions": [], "digest": 0},
    {"questions": [], "digest": "0", "extra": 1},
])
def test_an_entry_whose_project_record_is_missing_or_malformed_is_a_miss(tmp_path, record):
    root, cache_dir, _ = _cached(tmp_path, HELPER_CALLED_WITHOUT_SCALER, SAVER)
    assert _lookup(root, cache_dir) is not None
    path = _entry_path(cache_dir)
    data = json.loads(path.read_text())
    if record is _MISSING:
        del data["project"]
    else:
        data["project"] = record
    path.write_text(json.dumps(data))
    assert _lookup(root, cache_dir) is None


# A wrapper class that is not named like a scaler: only the project shows whether it builds one.
TRAIN_WITH_HELPER = TRAIN_WITH_WRAPPER.replace("NativeScalerWithGradNormCount", "AmpHelper")
HELPER = WRAPPER.replace("NativeScalerWithGradNormCount", "AmpHelper")


def test_the_rule_gates_ask_the_project_whether_an_import_builds_a_scaler(tmp_path, monkeypatch):
    import libcst

    parsed = []
    real = libcst.parse_module
    monkeypatch.setattr(libcst, "parse_module", lambda text, *a, **k: parsed.append(text) or real(text, *a, **k))
    root = _project(tmp_path, TRAIN_WITH_HELPER, HELPER.format(name="GradScaler"))
    job, result = _lint(root)
    assert [f.code for f in result.findings] == ["AMP006"] and "loss_scaler" in result.findings[0].message
    parsed.clear()
    (root / "utils.py").write_text(NOT_A_SCALER.replace("NativeScalerWithGradNormCount", "AmpHelper"), encoding="utf-8")
    job, result = _lint(root)
    assert result.findings == [] and parsed == []  # AMP006's gate: no scaler here, none built by the import
    assert ("build", "AmpHelper") in job.project.questions  # recorded, so a cached result follows the helper


def test_a_call_of_one_import_summarises_only_the_module_it_names(tmp_path):
    from amplint.project.context import ProjectIndex
    from amplint.project.phase import summarize_path
    from amplint.project.records import ImportedName, ModuleSummary

    (tmp_path / "amp_utils.py").write_text(
        "import torch\n\n\ndef torch_autocast(enabled=True):\n    return torch.autocast('cuda', enabled=enabled)\n")
    (tmp_path / "checkpoints.py").write_text(SAVER, encoding="utf-8")
    (tmp_path / "train.py").write_text("from amp_utils import torch_autocast\nfrom checkpoints import save_checkpoint\n")
    summarised: list[str] = []

    def load(path: str):
        summarised.append(Path(path).name)
        return summarize_path(path)

    imports = ModuleSummary(imports=(ImportedName("torch_autocast", "amp_utils", 0, "torch_autocast"),
                                     ImportedName("save_checkpoint", "checkpoints", 0, "save_checkpoint")))
    context = DeferredContext(str(tmp_path / "train.py"), imports, ProjectIndex(tmp_path, load=load))
    one = context.get_for("torch_autocast")
    assert summarised == ["amp_utils.py"]
    assert [target.local for target in one.targets] == ["torch_autocast"]
    assert one.module(one.target("torch_autocast").module).function("torch_autocast") is not None
    whole = context.get()
    assert sorted(summarised) == ["amp_utils.py", "checkpoints.py"]  # each module summarised once
    assert whole.target("torch_autocast") == one.target("torch_autocast")
    # The cache entry records the question with the digest of what that one import reaches.
    assert ("one", "torch_autocast") in context.questions
    assert context.answer("one", "torch_autocast") == one.digest()
