"""Training-step events: the AMP-relevant calls of each function, classified once, in order."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cached_property

import libcst as cst

import amplint.amp.catalogue as API
import amplint.semantic.syntax as S
from amplint.semantic.records import CallSite, Context, Scope


class EventKind(str, Enum):
    SCALE_BACKWARD = "scale_backward"  # scaler.scale(loss).backward()
    BACKWARD = "backward"  # loss.backward()
    AUTOGRAD_BACKWARD = "autograd_backward"  # torch.autograd.backward(...)
    AUTOGRAD_GRAD = "autograd_grad"  # torch.autograd.grad(...)
    SCALE = "scale"  # scaler.scale(x) not directly backwarded
    UNSCALE = "unscale"  # scaler.unscale_(opt)
    SCALER_STEP = "scaler_step"  # scaler.step(opt)
    OPTIMIZER_STEP = "optimizer_step"  # opt.step()
    UPDATE = "update"  # scaler.update()
    ZERO_GRAD = "zero_grad"  # x.zero_grad()
    CLIP = "clip"  # clip_grad_norm_ / clip_grad_value_
    SAVE = "save"  # torch.save(...)
    LOAD_STATE_DICT = "load_state_dict"  # x.load_state_dict(...)

    def __str__(self) -> str:
        return self.value


K = EventKind
BACKWARD_KINDS = (K.SCALE_BACKWARD, K.BACKWARD, K.AUTOGRAD_BACKWARD)
# a function or loop with one of these runs training steps
TRAINING_KINDS = (*BACKWARD_KINDS, K.SCALER_STEP, K.OPTIMIZER_STEP)
# calls that only make sense with an enabled GradScaler
SCALER_KINDS = (K.SCALE_BACKWARD, K.SCALER_STEP, K.UPDATE, K.UNSCALE)
STEP_KINDS = (K.SCALER_STEP, K.OPTIMIZER_STEP)

_SCALER_METHODS = {
    "scale": K.SCALE, "unscale_": K.UNSCALE, "step": K.SCALER_STEP, "update": K.UPDATE,
    "load_state_dict": K.LOAD_STATE_DICT,
}


@dataclass(eq=False)
class Event:
    kind: EventKind
    site: CallSite
    scaler: str | None = None
    optimizer: str | None = None
    receiver: str | None = None

    @property
    def ctx(self) -> Context:
        return self.site.ctx

    @property
    def call(self) -> cst.Call:
        return self.site.node

    @property
    def order(self) -> int:
        return self.ctx.order


class EventFacts:
    """The ``facts.timeline`` service of :class:`~amplint.amp.facts.FileFacts`."""

    def __init__(self, facts: "FileFacts") -> None:
        self.facts = facts

    @cached_property
    def events(self) -> list[Event]:
        """Training-step events in source order (the walk's order)."""
        out: list[Event] = []
        consumed: set[cst.Call] = set()
        for site in self.facts.calls:
            event = self._classify(site, consumed)
            if event is not None:
                out.append(event)
        return [e for e in out if not (e.kind is K.SCALE and e.call in consumed)]

    def _classify(self, site: CallSite, consumed: set[cst.Call]) -> Event | None:
        call = site.node
        qualname = site.qualname
        by_name = {
            "torch.autograd.backward": K.AUTOGRAD_BACKWARD, "torch.autograd.grad": K.AUTOGRAD_GRAD, "torch.save": K.SAVE,
        }
        if qualname in by_name:
            return Event(by_name[qualname], site)
        if qualname in API.CLIP_FUNCTIONS:
            return Event(K.CLIP, site)
        func = call.func
        if not isinstance(func, cst.Attribute):
            return None
        method = func.attr.value
        receiver = S.dotted(func.value)
        if method == "backward":
            inner = func.value
            if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and inner.func.attr.value == "scale":
                scaler = S.dotted(inner.func.value)
                if self.facts.scaling.is_scaler(scaler):
                    consumed.add(inner)
                    return Event(K.SCALE_BACKWARD, site, scaler=scaler)
            return Event(K.BACKWARD, site, receiver=receiver)
        if receiver is None:
            return None
        if self.facts.scaling.is_scaler(receiver):
            kind = _SCALER_METHODS.get(method)
            if kind is None:
                return None
            args = S.positional_args(call)
            optimizer = S.dotted(args[0].value) if args and kind in (K.UNSCALE, K.SCALER_STEP) else None
            return Event(kind, site, scaler=receiver, optimizer=optimizer, receiver=receiver)
        optimizer = receiver if self.facts.optim.is_optimizer(receiver) else None
        if method == "step" and optimizer is not None and len(call.args) <= 1:
            return Event(K.OPTIMIZER_STEP, site, optimizer=receiver, receiver=receiver)
        if method == "zero_grad":
            return Event(K.ZERO_GRAD, site, optimizer=optimizer, receiver=receiver)
        if method in ("clip_grad_norm_", "clip_grad_value_") and receiver != "self" and not (
            set(receiver.split(".")) & API.FRAMEWORK_CLIPPERS
        ):
            return Event(K.CLIP, site, receiver=receiver)
        if method == "load_state_dict":
            return Event(K.LOAD_STATE_DICT, site, optimizer=optimizer, receiver=receiver)
        return None

    @cached_property
    def clip_helper_calls(self) -> list[Event]:
        """Calls of same-file functions that clip gradients and touch nothing else of the step
        (``self._clip_gradients(max_norm)``), as clip events at the call; not in :attr:`events`."""
        clippers = set()
        for function in self.facts.functions:
            kinds = {e.kind for e in self.events_by_scope.get(function.scope, [])}
            if K.CLIP in kinds and kinds <= {K.CLIP, K.ZERO_GRAD}:
                clippers.add(function.scope)
        if not clippers:
            return []
        return [
            Event(K.CLIP, site) for site in self.facts.calls
            if site.node not in self.event_by_call and any(f.scope in clippers for f in self.facts.callgraph.called_functions(site))
        ]

    @cached_property
    def events_by_scope(self) -> dict[Scope, list[Event]]:
        out: dict[Scope, list[Event]] = {}
        for event in self.events:
            out.setdefault(event.ctx.scope, []).append(event)
        return out

    @cached_property
    def event_by_call(self) -> dict[cst.Call, Event]:
        return {event.call: event for event in self.events}

    def inside_event_call(self, site: CallSite, kinds: frozenset[EventKind] | tuple[EventKind, ...]) -> bool:
        """``site`` is part of an event call of ``kinds`` in the same statement: an argument or
        receiver of it (``model.parameters()`` in a clip, ``scaler.scale(loss)`` in a backward)."""
        return any(
            event.kind in kinds and event.ctx.stmt is site.ctx.stmt and event.call is not site.node
            and self.facts.tree.contains(event.call, site.node)
            for event in self.events_by_scope.get(site.ctx.scope, [])
        )
