"""What checkpoint code names and builds: state-dict keys, the words of loader helpers, and
records turned into the dict that is saved (``asdict(snapshot)``)."""

from __future__ import annotations

import libcst as cst

import amplint.semantic.syntax as S

# Words in a helper's name that say it restores state from a checkpoint.
LOADER_WORDS = ("load", "resume", "restore", "checkpoint", "ckpt")
# Suffixes that say a key holds a state dict: ``optimizer_state_dict``, ``optim_sd`` ...
_STATE_SUFFIXES = ("_state_dict", "_state", "_sd", "_dict")

Item = tuple[str | None, cst.BaseExpression, cst.CSTNode]
# Calls that turn a record into the dict that is saved.
RECORD_TO_DICT = ("asdict", "dataclasses.asdict", "vars")


def _record_items(value: cst.CSTNode | None) -> tuple[str, list[Item]] | None:
    """``("Snapshot", items)`` for ``Snapshot(model_state=..., optimizer_state=...)``: a class
    (capitalised, by convention) built from keywords only."""
    if not isinstance(value, cst.Call) or not value.args or any(arg.keyword is None for arg in value.args):
        return None
    name = S.dotted(value.func)
    if name is None or not name.rsplit(".", 1)[-1][:1].isupper():
        return None
    return name, [(arg.keyword.value, arg.value, arg) for arg in value.args]  # type: ignore[union-attr]


def scaler_key_like(optimizer_key: str | None) -> str:
    """The key for the scaler's state, styled like the optimizer's: ``"optimizer_state_dict"``
    gives ``"scaler_state_dict"``, ``"optimizer"`` (or no key) gives ``"scaler"``."""
    if optimizer_key:
        for suffix in _STATE_SUFFIXES:
            if optimizer_key.endswith(suffix) and "optim" in optimizer_key[: -len(suffix)].lower():
                return "scaler" + suffix
    return "scaler"


def names_scaler_state(key: str | None) -> bool:
    """A checkpoint key that holds AMP state (``"scaler"``, ``"grad_scaler_sd"``, ``"amp"``)."""
    return bool(key) and ("scaler" in key.lower() or key.lower() in ("amp", "amp_state"))


def names_optimizer_state(key: str | None) -> bool:
    return bool(key) and key != "**" and "optim" in key.lower()


def _record_to_dict(node: cst.CSTNode | None) -> bool:
    """``asdict(x)`` / ``vars(x)``: the dict of one record."""
    return isinstance(node, cst.Call) and S.dotted(node.func) in RECORD_TO_DICT and len(node.args) == 1
