"""Checkpoint keys across saves and restores: a resume that reads a scaler key no save writes."""

from __future__ import annotations

from amplint.amp.checkpoint_helpers import scaler_key_read
from amplint.amp.events import Event


def unwritten_scaler_key(facts, event: Event):
    """For ``scaler.load_state_dict(ckpt["scaler"])`` beside an optimizer restore from the same
    checkpoint: ``(key, (module, function, save))`` when every save this file and its imports show
    writes that optimizer's key but none writes ``key``; ``None`` when any save cannot be read whole.
    """
    receiver = event.receiver
    if receiver is None or not facts.scaling.is_scaler(receiver):
        return None
    read = scaler_key_read(event.call)
    if read is None:
        return None
    checkpoint, key = read
    optimizer_keys = {
        lookup[1] for other in facts.checkpoints.state_restores
        if other.ctx.scope is event.ctx.scope and facts.checkpoints.restores_optimizer(other)
        and (lookup := facts.checkpoints.checkpoint_lookup(other)) is not None and lookup[0] == checkpoint
    }
    if not optimizer_keys:
        return None
    saves = list(facts.project.own_saves())
    if _settled(saves, key):
        return None  # whatever the imported modules save: they are not summarised
    saves += facts.project.imported_saves()
    writers = [(module, function, save) for module, function, save in saves if optimizer_keys & set(save.keys)]
    if not writers or _settled(saves, key):
        return None
    return key, writers[0]


def _settled(saves: list, key: str) -> bool:
    """No key is reported unwritten, whatever other saves write: one of ``saves`` writes ``key``,
    cannot be read whole, or writes a dict built elsewhere (its keys are not all seen)."""
    return any(key in save.keys or not save.complete or function.saved_whole for _, function, save in saves)
