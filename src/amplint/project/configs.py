"""The precision a DeepSpeed config file of the project enables, for a path the code names as a literal.

``deepspeed.initialize(..., config="configs/ds_fp16.json")`` hands DeepSpeed a path, which it opens
from the process's working directory (deepspeed 0.19.8 ``runtime/config.py:441-444``,
``runtime/tensor_parallel/init_utils.py:22-24``). A script is run from its own folder or from a
folder above it, so the path is looked for as the project pass looks for a module
(:func:`amplint.project.resolve.search_folders`): against the linted file's folder, then each
folder up to the project root. Every candidate that exists is read; the answer is the precision
they all enable, and unknown (``None``) whenever it cannot be one:

- no candidate exists, the path is absolute or starts with ``~``, or lies outside the project;
- a candidate does not parse as JSON (DeepSpeed reads HJSON, a superset: a file only HJSON reads
  is unknown), is not an object, or repeats a key (DeepSpeed refuses it:
  ``config_utils.dict_raise_error_on_duplicate_keys``);
- a value anywhere is the string ``"auto"`` (a config written for the Hugging Face Trainer's or
  Accelerate's integration, which fill those in; DeepSpeed itself does not read ``"auto"``);
- ``enabled`` of the ``"fp16"`` or ``"bf16"`` section is not a JSON boolean, or both are true
  (DeepSpeed refuses that: ``runtime/config.py:511-512``);
- the candidates disagree.

The ``"bf16"`` section is read as DeepSpeed reads it, falling back to the old ``"bfloat16"`` key
(``runtime/precision_config.py:34-38``); a section's ``enabled`` defaults to false
(``precision_config.py:46``, ``:105``).

A config that enables neither but turns on ``"torch_autocast"`` with a float16 ``dtype`` and no
ZeRO (``"zero_optimization"`` absent or at stage 0) is :data:`TORCH_AUTOCAST_FP16`: the engine
then keeps the model in float32, runs its forward under ``torch.autocast`` and scales the loss
with a ``torch.amp.GradScaler`` of its own, which only ``engine.step()`` steps
(``runtime/engine.py:666-672``, ``3419-3420``, ``3512-3514``). With ZeRO the ZeRO optimizer owns
that scaler (``runtime/zero/stage_1_and_2.py:2976-2978``): that config is unknown here, and so is
one whose stage is not a literal integer, whose ``dtype`` is missing (the device's default) or
not a float16 spelling, or that enables ``"fp16"`` or ``"bf16"`` beside ``"torch_autocast"``.
"""

from __future__ import annotations

from pathlib import Path

# What a config enables: one of the precisions, or neither; ``None`` stands for unknown.
FP16, BF16, NEITHER, TORCH_AUTOCAST_FP16 = "fp16", "bf16", "fp32", "torch_autocast-fp16"
# ``DtypeEnum.fp16``'s spellings (deepspeed 0.19.8 ``runtime/config.py:146``).
_FP16_SPELLINGS = frozenset({"torch.float16", "fp16", "float16", "half"})
# A DeepSpeed config is a few kilobytes; a larger file is not read.
_MAX_CONFIG_BYTES = 1 << 20


def config_precision(importer: str, literal: str, root: str | Path) -> str | None:
    """``"fp16"``, ``"bf16"`` or :data:`TORCH_AUTOCAST_FP16` when every candidate file for the
    path ``literal``, named in the file ``importer``, enables it; ``None`` when they enable none
    of them or the answer is unknown."""
    from amplint.project.resolve import launch_root, normalized, search_folders

    if not literal or literal.startswith("~") or "\x00" in literal or Path(literal).is_absolute():
        return None
    root_path = launch_root(Path(normalized(importer)), Path(normalized(root)))
    found = set()
    for folder in search_folders(Path(normalized(importer)), root_path):
        candidate = Path(normalized(folder / literal))
        if not _inside(candidate, root_path) or not candidate.is_file():
            continue
        found.add(_file_precision(candidate))
    if len(found) != 1:
        return None  # none exists, or they disagree
    precision = found.pop()
    return precision if precision in (FP16, BF16, TORCH_AUTOCAST_FP16) else None


def precision_of(config: object) -> str | None:
    """What a parsed config enables (:data:`FP16`, :data:`BF16`, :data:`TORCH_AUTOCAST_FP16`,
    :data:`NEITHER`); ``None`` when unknown (see the module's docstring)."""
    if not isinstance(config, dict) or _holds_auto(config):
        return None
    fp16 = _enabled(config.get("fp16"))
    bf16 = _enabled(config["bf16"] if config.get("bf16") is not None else config.get("bfloat16"))
    autocast = _enabled(config.get("torch_autocast"))
    if fp16 is None or bf16 is None or autocast is None or (fp16 and bf16):
        return None
    if fp16 or bf16:
        return None if autocast else FP16 if fp16 else BF16
    if not autocast:
        return NEITHER
    dtype, zero = config["torch_autocast"].get("dtype"), config.get("zero_optimization")
    stage = zero.get("stage", 0) if isinstance(zero, dict) else 0 if zero is None else None
    if dtype not in _FP16_SPELLINGS or stage != 0 or isinstance(stage, bool):
        return None  # another dtype, the device's default, or a ZeRO optimizer owning the scaler
    return TORCH_AUTOCAST_FP16


def _file_precision(path: Path) -> str | None:
    import json

    from amplint.sourcefile import read_bytes_or_none

    data = read_bytes_or_none(path)
    if data is None or len(data) > _MAX_CONFIG_BYTES:
        return None
    try:
        config = json.loads(data.decode("utf-8-sig"), object_pairs_hook=_refusing_duplicates)
    except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return None
    return precision_of(config)


def _refusing_duplicates(pairs: list[tuple[str, object]]) -> dict:
    config = dict(pairs)
    if len(config) != len(pairs):
        raise ValueError("duplicate key")
    return config


def _enabled(section: object) -> bool | None:
    """A section's ``enabled``: ``False`` when the section is absent; ``None`` when unknown."""
    if section is None:
        return False
    if not isinstance(section, dict):
        return None
    enabled = section.get("enabled", False)
    return enabled if isinstance(enabled, bool) else None


def _holds_auto(value: object) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if item == "auto":
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True
