"""Checkpoint helpers of libraries, summarised like a project's own: what they save and restore,
and the argument that hands them the scaler.

- timm: ``CheckpointSaver(model, optimizer, args, model_ema, amp_scaler=...)`` saves
  ``amp_scaler``'s state with the optimizer's; ``resume_checkpoint(model, path, optimizer,
  loss_scaler=...)`` restores it.
- fvcore / detectron2: ``Checkpointer(model, save_dir, **checkpointables)`` saves and restores the
  state of every keyword it is given (``optimizer=``, ``scheduler=``, ``scaler=``), and skips on
  load the ones an older checkpoint does not have.
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from amplint.project.records import FunctionSummary

_CHECKPOINT_SAVER = FunctionSummary(
    name="CheckpointSaver", line=0,
    params=("model", "optimizer", "args", "model_ema", "amp_scaler", "checkpoint_prefix", "recovery_prefix",
            "checkpoint_dir", "recovery_dir", "decreasing", "max_history", "unwrap_fn"),
    defaults=("args", "model_ema", "amp_scaler", "checkpoint_prefix", "recovery_prefix", "checkpoint_dir",
              "recovery_dir", "decreasing", "max_history", "unwrap_fn"),
    saves_optimizer=True, saves_scaler=True, saved_params=("amp_scaler", "model", "optimizer"),
    scaler_params=("amp_scaler",),
)
_RESUME_CHECKPOINT = FunctionSummary(
    name="resume_checkpoint", line=0, params=("model", "checkpoint_path", "optimizer", "loss_scaler", "log_info"),
    defaults=("optimizer", "loss_scaler", "log_info"), restores_optimizer=True, restores_scaler=True,
    restored_params=("loss_scaler", "model", "optimizer"), scaler_params=("loss_scaler",),
)
# ``scaler`` stands for any keyword: the checkpointer takes ``**checkpointables``.
_CHECKPOINTER = FunctionSummary(
    name="Checkpointer", line=0, params=("model", "save_dir"), keyword_only=("save_to_disk", "optimizer", "scheduler", "scaler"),
    has_varkw=True, defaults=("save_dir", "save_to_disk", "optimizer", "scheduler", "scaler"),
    saves_optimizer=True, saves_scaler=True, saved_params=("model", "optimizer", "scaler", "scheduler"),
    scaler_params=("scaler",),
)

_BY_NAME: dict[str, tuple[str, FunctionSummary]] = {
    "timm.utils.CheckpointSaver": ("timm", _CHECKPOINT_SAVER),
    "timm.utils.checkpoint_saver.CheckpointSaver": ("timm", _CHECKPOINT_SAVER),
    "timm.models.resume_checkpoint": ("timm", _RESUME_CHECKPOINT),
    "timm.models.helpers.resume_checkpoint": ("timm", _RESUME_CHECKPOINT),
    "timm.models._helpers.resume_checkpoint": ("timm", _RESUME_CHECKPOINT),
    "fvcore.common.checkpoint.Checkpointer": ("fvcore", _CHECKPOINTER),
    "detectron2.checkpoint.Checkpointer": ("detectron2", _CHECKPOINTER),
    "detectron2.checkpoint.DetectionCheckpointer": ("detectron2", _CHECKPOINTER),
}
# Each under the name it is called by (``DetectionCheckpointer``, not ``Checkpointer``).
LIBRARY_HELPERS = {
    qualname: (library, replace(function, name=qualname.rsplit(".", 1)[-1])) for qualname, (library, function) in _BY_NAME.items()
}
# Keywords that hand a checkpointer an object whose own state_dict may hold the scaler.
DELEGATING_KEYWORDS = ("trainer",)


def library_subclasses(facts, methods: dict[str, tuple[str, ...]], defined: dict) -> list[FunctionSummary]:
    """A top-level class that subclasses a library checkpointer (fvcore's ``Checkpointer``)
    without an ``__init__`` of its own is built as that checkpointer is: the library's summary,
    under the class's name (dinov2's ``FSDPCheckpointer(model, save_dir, optimizer=optimizer)``). ``methods``: each
    top-level class's methods (qualified); ``defined``: the module's function summaries by name."""
    out = []
    for scope in facts.scopes:
        node = scope.node
        if scope.kind != "class" or scope.parent is None or scope.parent.kind != "module" or not isinstance(node, cst.ClassDef):
            continue
        name = node.name.value
        if name not in methods or f"{name}.__init__" in methods[name] or name in defined:
            continue
        bases = [facts.bindings.qualname(base.value, scope.parent) for base in node.bases if base.keyword is None]
        found = [LIBRARY_HELPERS[b][1] for b in bases if b in LIBRARY_HELPERS]
        if found:
            out.append(replace(found[0], name=name, line=facts.position(node.name).start.line))
    return out
