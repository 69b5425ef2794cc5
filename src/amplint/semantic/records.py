"""What the walk records: scopes and their bindings, loops, branches, calls, assignments, references.

Plain data, one class per kind of fact; nothing here knows about torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import libcst as cst

from amplint.semantic.syntax import bound_names


class BindingKind(str, Enum):
    IMPORT = "import"
    ASSIGNMENT = "assignment"  # ``x = ...``, ``x += ...``, ``(x := ...)``, ``x: T = ...``
    PARAMETER = "parameter"
    LOOP_TARGET = "loop"  # ``for x in ...``
    COMPREHENSION = "comprehension"
    EXCEPT = "except"  # ``except E as x``
    DEF = "def"
    CLASS = "class"
    ATTRIBUTE = "attribute"  # ``self.x = ...`` in a method, kept on the class scope


@dataclass(eq=False)
class Binding:
    """One place that binds a name (or, for ``ATTRIBUTE``, an attribute of a class's instances)."""

    name: str
    kind: BindingKind
    scope: "Scope"
    node: cst.CSTNode | None  # the binding statement, alias, parameter or definition
    target: str | None = None  # imports: the qualified name bound (``torch.cuda.amp.GradScaler``)
    value: cst.BaseExpression | None = None  # simple assignments: the value bound

    @property
    def is_import(self) -> bool:
        return self.kind is BindingKind.IMPORT


@dataclass(eq=False)
class Scope:
    kind: str  # "module" | "class" | "function"
    node: cst.CSTNode
    parent: "Scope | None"
    name: str = "<module>"
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    # class scopes: ``self.<attr>`` assignments made in the class's methods
    attributes: dict[str, list[Binding]] = field(default_factory=dict)
    declared_global: set[str] = field(default_factory=set)  # ``global x`` in this function

    def bind(self, name: str, kind: BindingKind, node: cst.CSTNode | None = None, target: str | None = None,
             value: cst.BaseExpression | None = None) -> Binding:
        if name in self.declared_global and self.parent is not None:
            return self.module.bind(name, kind, node, target, value)
        binding = Binding(name, kind, self, node, target, value)
        self.bindings.setdefault(name, []).append(binding)
        return binding

    @property
    def module(self) -> "Scope":
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope

    @property
    def function(self) -> "Scope":
        """The nearest function or module scope (class bodies run once, like module code)."""
        scope: Scope | None = self
        while scope is not None and scope.kind == "class":
            scope = scope.parent
        return scope or self

    @property
    def class_scope(self) -> "Scope | None":
        scope = self.parent if self.kind == "function" else None
        return scope if scope is not None and scope.kind == "class" else None


@dataclass(eq=False)
class Loop:
    node: cst.CSTNode  # cst.For | cst.While
    scope: Scope
    parent: "Loop | None"
    stmt_index: int  # order of the loop statement in the walk

    @property
    def target_names(self) -> set[str]:
        if isinstance(self.node, cst.For):
            return bound_names(self.node.target)
        return set()


@dataclass(frozen=True)
class Branch:
    node: cst.CSTNode  # If | Try | ...
    part: str  # "body" | "orelse" | "handler" | "finally"


@dataclass(eq=False)
class Context:
    """Where a node sits: its function scope, enclosing loops, ``with`` blocks, branches, statement."""

    scope: Scope
    loops: tuple[Loop, ...]
    withs: tuple[cst.With, ...]
    branches: tuple[Branch, ...]
    stmt: cst.CSTNode | None
    order: int
    suite: cst.SimpleStatementSuite | None = None  # the one-line body (``if x: a()``) it is written in


@dataclass(eq=False)
class CallSite:
    node: cst.Call
    ctx: Context
    func_text: str | None  # dotted text of the callee (``self.scaler.step``)
    qualname: str | None = None  # resolved canonical name, when imported
    is_expression_statement: bool = False  # the call's value is discarded
    in_decorator: bool = False


@dataclass(eq=False)
class Assignment:
    targets: tuple[str, ...]  # dotted texts (``self.scaler``), subscripts as ``ckpt[...]``
    value: cst.BaseExpression | None
    node: cst.CSTNode
    ctx: Context
    subscript_keys: tuple[tuple[str, str | None], ...] = ()  # (base, literal key) for ``d["k"] = v``


@dataclass(eq=False)
class Reference:
    node: cst.CSTNode  # Name or Attribute chain
    parts: tuple[str, ...]
    ctx: Context
    parent: cst.CSTNode | None  # the node that holds the reference (Call, Decorator, ...)
    role: str  # "call" (callee), "decorator", "other"


@dataclass(eq=False)
class ImportRecord:
    node: cst.Import | cst.ImportFrom
    stmt: cst.CSTNode | None
    scope: Scope
    # (alias node, bound name, qualified target)
    aliases: tuple[tuple[cst.ImportAlias, str, str], ...]
    ctx: Context


@dataclass(eq=False)
class FunctionInfo:
    node: cst.FunctionDef
    scope: Scope
    class_name: str | None
    params: tuple[str, ...]
    ctx: Context  # where the ``def`` itself sits
