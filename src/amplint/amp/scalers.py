"""GradScalers: where they are built, how they are used, whether they can be enabled."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import libcst as cst

import amplint.amp.catalogue as API
from amplint.amp.events import Event, EventKind
import amplint.semantic.syntax as S
from amplint.semantic.identity import Variable
from amplint.semantic.records import CallSite, Context, Scope
from amplint.semantic.values import value_calls


def built_disabled(site: CallSite) -> bool:
    """The construction passes a literal ``enabled=False``."""
    return S.bool_value(S.keyword_arg_value(site.node, "enabled")) is False


@dataclass(eq=False)
class ScalerInfo:
    """The GradScalers written as one dotted text; ``built_as`` tells which variable each
    construction binds, so that two functions' ``scaler`` (or two classes' ``self.scaler``)
    are told apart."""

    key: str
    constructions: list[CallSite] = field(default_factory=list)
    evidence: set[str] = field(default_factory=set)
    built_as: dict[CallSite, Variable | None] = field(default_factory=dict)
    # Asked once per scope that uses the scaler: scanning every construction each time is
    # quadratic in a file of functions that each build their own ``scaler``.
    by_variable: dict[Variable, list[CallSite]] = field(default_factory=dict)

    def add_construction(self, site: CallSite, variable: Variable | None) -> None:
        self.constructions.append(site)
        self.built_as[site] = variable
        if variable is not None:
            self.by_variable.setdefault(variable, []).append(site)

    def constructions_of(self, variable: Variable | None) -> list[CallSite]:
        return self.by_variable.get(variable, []) if variable is not None else []

    @property
    def provably_disabled(self) -> bool:
        return bool(self.constructions) and all(built_disabled(c) for c in self.constructions)


class ScalerFacts:
    """The ``facts.scaling`` service of :class:`~amplint.amp.facts.FileFacts`."""

    def __init__(self, facts: "FileFacts") -> None:
        self.facts = facts

    @cached_property
    def scalers(self) -> dict[str, ScalerInfo]:
        """Scaler keys (dotted text) with what shows each is a scaler: a construction assigned to
        it, ``unscale_``, ``.scale(loss).backward()`` or a one-argument ``step`` on a name like one."""
        out: dict[str, ScalerInfo] = {}

        def get(key: str) -> ScalerInfo:
            return out.setdefault(key, ScalerInfo(key))

        for assignment in self.facts.assignments:
            for call in value_calls(assignment.value):
                site = self.facts.call_site(call)
                if site is not None and self.is_scaler_construction(site):
                    for target in assignment.targets:
                        info = get(target)
                        info.add_construction(site, self.facts.identity.variable(target, assignment.ctx.scope))
                        info.evidence.add("constructed")
        for site in self.facts.calls:
            func = site.node.func
            if not isinstance(func, cst.Attribute):
                continue
            receiver = S.dotted(func.value)
            method = func.attr.value
            if method == "unscale_" and receiver is not None:
                get(receiver).evidence.add("unscale_")
            elif method == "backward" and isinstance(func.value, cst.Call):
                inner = func.value
                if isinstance(inner.func, cst.Attribute) and inner.func.attr.value == "scale":
                    scaler = S.dotted(inner.func.value)
                    if scaler is not None and len(inner.args) == 1:
                        get(scaler).evidence.add("scale-backward")
            elif method == "step" and receiver is not None and "scaler" in receiver.rsplit(".", 1)[-1].lower() and len(S.positional_args(site.node)) == 1:
                get(receiver).evidence.add("named-step")
        # A DeepSpeed engine scales its own loss for a manual backward (``engine.scale(loss)
        # .backward()``, deepspeed 0.19.8 engine.py:3338): not a GradScaler.
        for engine in self._deepspeed_engines():
            if engine in out and not out[engine].constructions:
                del out[engine]
        return out

    def _deepspeed_engines(self) -> set[str]:
        """The names ``deepspeed.initialize(...)`` returns its engine into (``engine, opt, _, _ = ...``)."""
        from amplint.amp.deepspeed_configs import deepspeed_initializations

        return {targets[0] for _, targets in deepspeed_initializations(self.facts) if targets}

    @cached_property
    def _assignments_by_target_and_scope(self) -> dict[tuple[str, int], list]:
        index: dict[tuple[str, int], list] = {}
        for assignment in self.facts.assignments:
            for target in dict.fromkeys(assignment.targets):
                index.setdefault((target, id(assignment.ctx.scope)), []).append(assignment)
        return index

    def own_assignments_to(self, key: str, scope: Scope) -> list:
        """Assignments to the dotted text ``key`` made in ``scope`` itself, in source order (not
        those at module level): asked per function, so looked up rather than filtered."""
        return self._assignments_by_target_and_scope.get((key, id(scope)), [])

    def scaler_optional(self, key: str) -> bool:
        """``self.scaler = None`` and built only under some ``if``: AMP may be off on every path we see."""
        # A question of the key alone, asked once per scope: answered once per key.
        cache = self._scaler_optional_by_key
        if key not in cache:
            assignments = self.facts.assignments_to(key)
            others = [a for a in assignments if not S.is_none(a.value)]
            cache[key] = len(others) < len(assignments) and bool(others) and all(a.ctx.branches for a in others)
        return cache[key]

    @cached_property
    def _scaler_optional_by_key(self) -> dict[str, bool]:
        return {}

    def is_scaler(self, key: str | None) -> bool:
        return key is not None and key in self.scalers

    def _names_scaler_class(self, node: cst.CSTNode | None, scope: Scope, depth: int = 0) -> bool:
        """``node`` is a GradScaler class: by name resolution or through an alias variable."""
        if node is None:
            return False
        if isinstance(node, cst.IfExp):
            return self._names_scaler_class(node.body, scope, depth) and self._names_scaler_class(node.orelse, scope, depth)
        if self.facts.bindings.qualname(node, scope) in API.SCALER_CLASSES:
            return True
        targets = self.facts.bindings.import_targets(node.value, scope) if isinstance(node, cst.Name) else set()
        if targets and targets <= API.SCALER_CLASSES:
            return True
        text = S.dotted(node)
        if text is None or depth > 2:
            return False
        assignments = [a for a in self.facts.assignments_to(text, scope) if a.value is not None and a.targets == (text,)]
        return bool(assignments) and all(self._names_scaler_class(a.value, a.ctx.scope, depth + 1) for a in assignments)

    def is_scaler_construction(self, site: CallSite) -> bool:
        """``torch.amp.GradScaler(...)`` in any spelling, or through ``GS = torch.amp.GradScaler``."""
        if site.qualname in API.SCALER_CLASSES:
            return True
        if site.qualname is not None or site.func_text is None or "." in site.func_text:
            return False
        return self._names_scaler_class(site.node.func, site.ctx.scope)

    @cached_property
    def scaler_construction_sites(self) -> list[CallSite]:
        """Every call that builds a GradScaler, assigned or not."""
        return [site for site in self.facts.calls if not site.in_decorator and self.is_scaler_construction(site)]

    def scaler_provably_disabled(self, key: str | None, scope: Scope) -> bool:
        """The scaler ``key`` as used in ``scope`` is built with ``enabled=False``.

        The constructions of the variable ``key`` names in ``scope`` decide when there are any
        (one name is often built differently in several functions or classes of one file);
        otherwise (a parameter, a scaler built elsewhere) all of the file's constructions of ``key``.
        """
        sites = self._constructions_in_force(key, scope)
        return bool(sites) and all(built_disabled(c) for c in sites)

    def _constructions_in_force(self, key: str | None, scope: Scope) -> list:
        info = self.scalers.get(key) if key is not None else None
        if info is None:
            return []
        return info.constructions_of(self.facts.identity.variable(key, scope)) or info.constructions

    def may_be_built_disabled(self, key: str | None, scope: Scope) -> bool:
        """A construction of the scaler ``key`` as used in ``scope`` passes an ``enabled=`` that is
        not a literal ``True`` (``GradScaler(enabled=args.amp)``): a run may hold a disabled one,
        whose ``state_dict()`` is ``{}``. Which constructions count is as in
        :meth:`scaler_provably_disabled`."""
        values = [S.keyword_arg_value(site.node, "enabled") for site in self._constructions_in_force(key, scope)]
        return any(value is not None and S.bool_value(value) is not True for value in values)

    def backward_scaler(self, event) -> str | None:
        """The scaler whose scale a backward runs on: ``scaler.scale(loss).backward()``,
        ``(scaler.scale(loss) / n).backward()`` or ``scaled = scaler.scale(loss); scaled.backward()``."""
        from amplint.amp.events import K

        if event.kind is K.SCALE_BACKWARD:
            return event.scaler
        if event.kind not in (K.BACKWARD, K.AUTOGRAD_BACKWARD):
            return None
        target = event.call.func.value if event.kind is K.BACKWARD and isinstance(event.call.func, cst.Attribute) else event.call
        for other in self.facts.timeline.events_by_scope.get(event.ctx.scope, []):
            if other.kind is K.SCALE and self.facts.tree.contains(target, other.call):
                return other.scaler
        if event.kind is K.BACKWARD and event.receiver is not None:
            for assignment in self.facts.assignments_to(event.receiver, event.ctx.scope):
                if assignment.value is None or not self._may_reach(assignment.ctx, event.ctx):
                    continue
                for other in self.facts.timeline.events_by_scope.get(assignment.ctx.scope, []):
                    if other.kind is K.SCALE and self.facts.tree.contains(assignment.value, other.call):
                        return other.scaler
        return None

    def is_disabled_scaler(self, key: str | None) -> bool:
        """Every construction of the scaler ``key`` in this file passes ``enabled=False``."""
        info = self.scalers.get(key) if key is not None else None
        return info is not None and info.provably_disabled

    def _may_reach(self, a: Context, b: Context) -> bool:
        """``a`` may run before ``b``: on a path of their function, or, in different scopes (a
        module-level assignment read in a function), always."""
        return self.facts.control_flow.reaches(a, b) if a.scope is b.scope else True

    def optimizer_rebound_per_pass(self, *events: Event) -> bool:
        """A loop around one of ``events`` rebinds their optimizer (``for opt in optimizers:
        scaler.unscale_(opt)``): each pass handles a different optimizer."""
        name = (events[0].optimizer or "").split(".")[0]
        return any(name in loop.target_names for event in events for loop in event.ctx.loops)

    # -- scaled and unscaled losses
    def tensor_text(self, expr: cst.BaseExpression) -> str:
        """``expr``'s source without its own parentheses: ``(loss / n)`` and ``loss / n`` compare equal."""
        return self.facts.code(S.without_parens(expr)).strip()

    def backward_after_discarded_scale(self, scale: Event) -> Event | None:
        """For a ``scaler.scale(loss)`` statement whose result is thrown away, a ``loss.backward()``
        statement directly after it on the same tensor (the two merge into one)."""
        args = S.positional_args(scale.call)
        following = self.facts.statements.next_statement(scale.ctx.stmt)
        if following is None or len(args) != 1 or scale.call.args[0].keyword:
            return None
        target = self.tensor_text(args[0].value)
        found = None
        for other in self.facts.timeline.events_by_scope.get(scale.ctx.scope, []):
            if (
                other.kind is EventKind.BACKWARD
                and other.ctx.stmt is following
                and other.site.is_expression_statement
                and isinstance(other.call.func, cst.Attribute)
                and self.tensor_text(other.call.func.value) == target
            ):
                found = other
        return found

    def discarded_scale_before(self, backward: Event) -> bool:
        """A thrown-away ``scaler.scale(x)`` statement runs before ``x.backward()``, on its path."""
        target = self.tensor_text(backward.call.func.value)
        for event in self.facts.timeline.events_by_scope.get(backward.ctx.scope, []):
            if event.kind is EventKind.SCALE and event.site.is_expression_statement and self.facts.control_flow.reaches(event.ctx, backward.ctx):
                args = S.positional_args(event.call)
                if args and self.tensor_text(args[0].value) == target:
                    return True
        return False

    # -- whether the file uses AMP at all
    @cached_property
    def uses_amp(self) -> bool:
        """The file builds a GradScaler that may be enabled, scales a loss through an unbuilt
        scaler (``self.scaler`` made elsewhere), or enters an autocast region that may be enabled."""
        for info in self.scalers.values():
            if info.constructions and not info.provably_disabled:
                return True
            if not info.constructions and "scale-backward" in info.evidence:
                return True
        return any(r.resolved and r.maybe_enabled for regions in self.facts.autocast.autocast_regions.values() for r in regions)

    def definite_scaler_seen_from(self, ctx: Context) -> bool:
        """An always-enabled GradScaler is built unconditionally where code at ``ctx`` sees it:
        not under an ``if``, not chosen by ``GradScaler() if amp else None``, not ``enabled=flag``."""
        for info in self.scalers.values():
            for site in info.constructions:
                enabled = S.keyword_arg_value(site.node, "enabled")
                if enabled is not None and S.bool_value(enabled) is not True:
                    continue
                if site.ctx.branches:
                    continue
                if not self.facts.identity.same_variable(info.key, site.ctx, ctx) and site.ctx.scope.kind != "module":
                    continue
                stmt = site.ctx.stmt
                if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Assign) and stmt.body[0].value is not site.node:
                    continue
                return True
        return False
