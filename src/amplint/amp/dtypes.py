"""Which dtypes an expression may name: literals, choices between them, dict lookups, and the
command-line choices that restrict a lookup's key (``choices=["fp32", "bf16"]``)."""

from __future__ import annotations

from functools import cached_property

import libcst as cst

import amplint.amp.catalogue as API
import amplint.semantic.syntax as S
from amplint.semantic.records import Scope
from amplint.semantic.values import alternatives

_MAX_DEPTH = 3


class DtypeFacts:
    """The ``facts.dtypes`` service of :class:`~amplint.amp.facts.FileFacts`; asks ``assigned_alternatives`` and ``calls``."""

    def __init__(self, facts: "FileFacts") -> None:
        self.facts = facts

    @cached_property
    def command_line_choices(self) -> dict[str, frozenset[str]]:
        """``args.<dest>`` -> the literal ``choices=`` of the ``add_argument`` that defines it."""
        out: dict[str, frozenset[str]] = {}
        for site in self.facts.calls:
            if not (site.func_text or "").endswith("add_argument"):
                continue
            call = site.node
            choices = S.keyword_arg_value(call, "choices")
            if not isinstance(choices, (cst.List, cst.Tuple, cst.Set)):
                continue
            values = [S.string_value(e.value) for e in choices.elements]
            if any(v is None for v in values):
                continue
            dest = S.string_value(S.keyword_arg_value(call, "dest"))
            if dest is None:
                flags = [S.string_value(a.value) for a in S.positional_args(call)]
                longs = [f for f in flags if f and f.startswith("--")]
                dest = longs[0][2:].replace("-", "_") if longs else None
            if dest:
                out[dest] = out.get(dest, frozenset()) | frozenset(values)  # type: ignore[arg-type]
        return out

    def dtype_choices(self, node: cst.BaseExpression | None, scope: Scope, depth: int = 0) -> frozenset[str] | None:
        """Every dtype ``node`` may evaluate to (``torch.bfloat16 if bf16 else torch.float32``, a
        ``{"fp32": torch.float32, "bf16": torch.bfloat16}[key]`` lookup, a name assigned those);
        ``None`` as soon as one alternative is not known."""
        if node is None or depth > _MAX_DEPTH:
            return None
        out: set[str] = set()
        for leaf in alternatives(node):
            found = self._leaf_dtypes(leaf, scope, depth)
            if found is None:
                return None
            out |= found
        return frozenset(out) or None

    def _leaf_dtypes(self, leaf: cst.BaseExpression, scope: Scope, depth: int) -> frozenset[str] | None:
        qualname = self.facts.bindings.qualname(leaf, scope) if S.dotted(leaf) is not None else None
        spelled = qualname if qualname is not None and qualname.startswith("torch.") else S.string_value(leaf)
        literal = API.dtype_from_text(spelled)
        if literal is not None:
            return frozenset({literal})
        if isinstance(leaf, cst.Subscript):
            values = self._lookup_values(leaf, scope, depth)
            if values is None:
                return None
            out: set[str] = set()
            for value in values:
                found = self.dtype_choices(value, scope, depth + 1)
                if found is None:
                    return None
                out |= found
            return frozenset(out)
        text = S.dotted(leaf)
        if text is None:
            return None
        function = self.facts.callgraph.function_of(scope)
        if function is not None and text in function.params:
            # the default and what each same-file call passes
            passed = self.facts.values.parameter_values(function, text)
            if not passed:
                return None
            out = set()
            for value, value_scope in passed:
                found = self.dtype_choices(value, value_scope, depth + 1)
                if found is None:
                    return None
                out |= found
            return frozenset(out)
        assigned = self.facts.values.assigned_alternatives(text, scope) or self._attribute_set_before(leaf, text, scope)
        if not assigned:
            return None
        out = set()
        for assignment, value in assigned:
            found = self.dtype_choices(value, assignment.ctx.scope, depth + 1) if value is not None else None
            if found is None:
                return None
            out |= found
        return frozenset(out)

    def _attribute_set_before(self, leaf: cst.BaseExpression, text: str, scope: Scope) -> list:
        """``args.dtype = torch.bfloat16 if bf16 else torch.float32`` and later, in the same
        function, ``autocast(..., dtype=args.dtype)``: the attribute's values, when that is the
        file's only assignment to it, it runs on every path (no branch, loop or ``try``), before
        the read, and nothing in between rebinds ``args`` or hands it to a call that could set it."""
        head = text.split(".")[0]
        if text.count(".") != 1 or head in ("self", "cls") or scope.kind != "function":
            return []
        facts = self.facts
        everywhere = facts.assignments_to(text)
        if len(everywhere) != 1:
            return []
        assignment = everywhere[0]
        ctx = assignment.ctx
        if ctx.scope is not scope or ctx.branches or ctx.loops:
            return []
        set_line = facts.position(ctx.stmt).end.line
        read_line = facts.position(leaf).start.line
        if read_line <= set_line:
            return []
        if any(a.ctx.scope is scope for a in facts.assignments_to(head, scope) if head in a.targets):
            return []
        for site in facts.calls:
            line = facts.position(site.node).start.line
            if site.ctx.scope is scope and set_line < line < read_line and any(
                isinstance(arg.value, cst.Name) and arg.value.value == head for arg in site.node.args
            ):
                return []
        return [(assignment, leaf_value) for leaf_value in (alternatives(assignment.value) or [None])]

    def _lookup_values(self, subscript: cst.Subscript, scope: Scope, depth: int) -> list[cst.BaseExpression] | None:
        """The values a dict lookup may return: the dict a literal or a name assigned once to one,
        its entries narrowed to a literal key or to the command-line choices of ``args.<dest>``."""
        if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
            return None
        table = subscript.value
        if not isinstance(table, cst.Dict):
            text = S.dotted(table)
            assigned = self.facts.values.assigned_alternatives(text, scope) if text is not None else []
            if len(assigned) != 1 or not isinstance(assigned[0][1], cst.Dict):
                return None
            table = assigned[0][1]
        items = S.dict_items(table)
        if items is None or any(key is None or key == "**" for key, _, _ in items):
            return None
        key_node = subscript.slice[0].slice.value
        wanted: frozenset[str] | None = None
        literal_key = S.string_value(key_node)
        if literal_key is not None:
            wanted = frozenset({literal_key})
        elif isinstance(key_node, cst.Attribute) and key_node.attr.value in self.command_line_choices:
            wanted = self.command_line_choices[key_node.attr.value]
        elif S.dotted(key_node) is not None:
            keys = [S.string_value(v) for _, v in self.facts.values.assigned_alternatives(S.dotted(key_node), scope)]
            wanted = frozenset(keys) if keys and None not in keys else None  # type: ignore[arg-type]
        values = [value for key, value, _ in items if wanted is None or key in wanted]
        return values or None
