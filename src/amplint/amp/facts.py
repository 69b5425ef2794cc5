"""Everything a rule may ask about one module: the semantic model plus the AMP view of it.

:class:`FileFacts` is the semantic model (:mod:`amplint.semantic`, which knows nothing about
torch) with the AMP domain composed on top: one service per module of this package, each an
attribute a rule asks (``facts.scaling.scalers``, ``facts.timeline.events``):

========================  ==================================================================
``facts.autocast``        autocast regions and the calls that build them
``facts.named_autocast``  autocast contexts reached through a name (``ctx = autocast(...)``)
``facts.scaling``         GradScalers: constructions, identity, what each call scales
``facts.optim``           optimizers and the parameters they own
``facts.timeline``        training-step events (scale, backward, unscale, clip, step, update, save)
``facts.iterations``      which events run in one iteration, and how often
``facts.protocol``        the GradScaler protocol run along each function's paths
``facts.training``        training loops and per-step functions
``facts.loss_scaling``    losses scaled elsewhere; ``facts.loop_scaling``: frameworks that scale
``facts.scaler_presence`` whether a scaler is in use around a place
``facts.checkpoints``     what a ``torch.save`` stores and a ``load_state_dict`` restores
``facts.models``          models and grad modes
``facts.casts``           half-precision casts of models and where they are undone
``facts.dtypes``          the dtypes a value may take
``facts.devices``         device checks and their fallbacks
``facts.compat``          deprecated APIs and compatibility fallbacks
``facts.torchscript``     scripted functions
``facts.overflow``        overflow-skip checks
``facts.project``         what this file's imports reach in the project
========================  ==================================================================

Each service computes its answers lazily and once, holds only ``facts``, and asks the others
through it. Rules never walk the tree themselves.
"""

from __future__ import annotations

from functools import cached_property

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
from amplint.amp.frameworks import FrameworkFacts
from amplint.amp.iterations import IterationFacts
from amplint.amp.loop_scaling import LoopScalingFacts
from amplint.amp.loss_scaling import LossScalingFacts
from amplint.amp.models import ModelFacts
from amplint.amp.named_autocast import NamedAutocastFacts
from amplint.amp.optimizers import OptimizerFacts
from amplint.amp.overflow import OverflowFacts
from amplint.amp.protocol import ProtocolFacts
from amplint.amp.scaler_presence import ScalerPresence
from amplint.amp.scalers import ScalerFacts
from amplint.amp.torchscript import ScriptFacts
from amplint.amp.training import TrainingFacts
from amplint.semantic.model import SemanticModel


class FileFacts(SemanticModel):
    def __init__(self, module: cst.Module, positions: dict[cst.CSTNode, CodeRange], path: str, settings=None,
                 project_context=None):
        self.settings = settings
        # What the run's ``# noqa`` directives suppressed, for the rules that run last; the
        # engine sets it (:class:`~amplint.noqa.SuppressionLog`).
        self.suppressions = None
        # A name the file never binds, which a ``from pkg.mod import *`` of the project binds
        # (``torch``), resolves as that binding: the deferred project context answers.
        star_target = getattr(project_context, "star_target", None)
        super().__init__(module, positions, path, star_names=star_target)
        self.autocast = AutocastFacts(self)
        self.named_autocast = NamedAutocastFacts(self)
        self.scaling = ScalerFacts(self)
        self.optim = OptimizerFacts(self)
        self.timeline = EventFacts(self)
        self.iterations = IterationFacts(self)
        self.protocol = ProtocolFacts(self)
        self.training = TrainingFacts(self)
        self.loss_scaling = LossScalingFacts(self)
        self.loop_scaling = LoopScalingFacts(self)
        self.scaler_presence = ScalerPresence(self)
        self.checkpoints = CheckpointFacts(self)
        self.models = ModelFacts(self)
        self.casts = CastFacts(self)
        self.dtypes = DtypeFacts(self)
        self.devices = DeviceFacts(self)
        self.compat = CompatFacts(self)
        self.torchscript = ScriptFacts(self)
        self.overflow = OverflowFacts(self)
        self.frameworks = FrameworkFacts(self)

    def canonical_name(self, qualname: str) -> str:
        return API.canonical(qualname)

    @cached_property
    def project(self):
        """The :class:`~amplint.project.query.ProjectView` of this file. The engine sets it with
        what the file's imports reach; facts built on their own see only the file itself."""
        from amplint.amp.summaries import module_summary
        from amplint.project.outline import outline_of
        from amplint.project.query import ProjectView
        from amplint.project.quiet_parse import parse

        tree = parse(self.module.code)
        if tree is None:
            from amplint.project.records import ModuleSummary

            return ProjectView(self, ModuleSummary())
        return ProjectView(self, lambda: module_summary(self, outline_of(tree)))

    @classmethod
    def from_source(cls, code: str, path: str = "example.py", settings=None) -> "FileFacts":
        """Facts for a source text, as the engine builds them (for tests and tools)."""
        from amplint.positions import Positions

        module = cst.parse_module(code)
        return cls(module, Positions(module), path, settings)
