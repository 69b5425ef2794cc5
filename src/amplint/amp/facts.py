"""Everything a rule may ask about one module: the semantic model plus the AMP view of it.

:class:`FileFacts` is the semantic model (:mod:`amplint.semantic`, which knows nothing about
torch) with the AMP domain on top, one part per module of this package: autocast regions
(:mod:`~amplint.amp.autocast`), GradScalers (:mod:`~amplint.amp.scalers`), optimizers
(:mod:`~amplint.amp.optimizers`), training-step events (:mod:`~amplint.amp.events`), training
loops and per-step functions (:mod:`~amplint.amp.training`), models and grad modes
(:mod:`~amplint.amp.models`) and compatibility fallbacks (:mod:`~amplint.amp.compat`).
Everything is derived lazily and once; rules never walk the tree themselves.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import CodeRange

import amplint.amp.catalogue as API
from amplint.amp.autocast import AutocastFacts
from amplint.amp.casts import CastFacts
from amplint.amp.checkpoints import CheckpointFacts
from amplint.amp.compat import CompatFacts
from amplint.amp.devices import DeviceFacts
from amplint.amp.dtypes import DtypeFacts
from amplint.amp.events import EventFacts
from amplint.amp.iterations import IterationFacts
from amplint.amp.loop_scaling import LoopScalingFacts
from amplint.amp.loss_scaling import LossScalingFacts
from amplint.amp.models import ModelFacts
from amplint.amp.named_autocast import NamedAutocastFacts
from amplint.amp.optimizers import OptimizerFacts
from amplint.amp.overflow import OverflowFacts
from amplint.amp.scaler_presence import ScalerPresence
from amplint.amp.scalers import ScalerFacts
from amplint.amp.torchscript import ScriptFacts
from amplint.amp.training import TrainingFacts
from amplint.semantic.call_index import CallIndex
from amplint.semantic.handlers import HandlerQueries
from amplint.semantic.import_uses import ImportUses
from amplint.semantic.model import SemanticModel
from amplint.semantic.statements import StatementQueries
from amplint.semantic.values import ValueQueries


class FileFacts(SemanticModel, AutocastFacts, ScalerFacts, OptimizerFacts, EventFacts, TrainingFacts, ModelFacts,
                CompatFacts, StatementQueries, CastFacts, CheckpointFacts, DeviceFacts,
                ScriptFacts, IterationFacts, LossScalingFacts, ValueQueries, CallIndex, ScalerPresence, ImportUses,
                HandlerQueries, DtypeFacts, LoopScalingFacts, NamedAutocastFacts, OverflowFacts):
    def __init__(self, module: cst.Module, positions: dict[cst.CSTNode, CodeRange], path: str, settings=None):
        self.settings = settings
        super().__init__(module, positions, path)

    def canonical_name(self, qualname: str) -> str:
        return API.canonical(qualname)

    @classmethod
    def from_source(cls, code: str, path: str = "example.py", settings=None) -> "FileFacts":
        """Facts for a source text, as the engine builds them (for tests and tools)."""
        from amplint.positions import Positions

        module = cst.parse_module(code)
        return cls(module, Positions(module), path, settings)
