"""One pass over a module that gathers every fact the rules query.

The walk records raw syntax (scopes, imports, assignments, calls, dotted
references, ``with`` blocks, loops, branches); :class:`FileFacts` then resolves
names and derives the AMP view once: scalers, optimizers, autocast regions,
training loops and the ordered events of each function body. Rules never walk
the tree themselves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable, Iterator

import libcst as cst
from libcst.metadata import CodeRange

from amplint import names as N

# --------------------------------------------------------------------------- records


@dataclass(eq=False)
class Scope:
    kind: str  # "module" | "class" | "function"
    node: cst.CSTNode
    parent: "Scope | None"
    name: str = "<module>"
    # name -> list of bindings: ("import", qualname) or ("local", None)
    bindings: dict[str, list[tuple[str, str | None]]] = field(default_factory=dict)

    def bind(self, name: str, kind: str, target: str | None = None) -> None:
        self.bindings.setdefault(name, []).append((kind, target))

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
            return _bound_names(self.node.target)
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


@dataclass(eq=False)
class CallSite:
    node: cst.Call
    ctx: Context
    func_text: str | None  # dotted text of the callee (``self.scaler.step``)
    qualname: str | None = None  # resolved canonical name, when imported
    parent_call: cst.Call | None = None  # set for ``x`` in ``x.backward()`` style chains
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


@dataclass(eq=False)
class AutocastRegion:
    """A span of code that runs with autocast enabled (as far as the code shows)."""

    node: cst.CSTNode  # With or FunctionDef (decorated)
    call: cst.Call | None  # the autocast(...) call, when one is visible
    device: str | None  # "cuda" | "cpu" | ... ; None when unknown
    dtype: str | None  # "float16" | "bfloat16" | "float32" | ... ; None when unknown
    enabled: bool | None  # literal enabled=..., None when not literal
    resolved: bool  # True: proven autocast by name resolution; False: named like one
    deprecated: str | None = None  # "cuda" / "cpu" for torch.cuda.amp / torch.cpu.amp
    conditional: bool = False  # e.g. ``nullcontext() if cpu else autocast(...)``

    @property
    def maybe_enabled(self) -> bool:
        return self.enabled is not False

    @property
    def effective_dtype(self) -> str | None:
        if self.dtype is not None:
            return self.dtype
        if self.call is None:
            return None
        if self.device == "cuda":
            return "float16"
        if self.device == "cpu":
            return "bfloat16"
        return None


@dataclass(eq=False)
class ScalerInfo:
    key: str
    constructions: list[CallSite] = field(default_factory=list)
    evidence: set[str] = field(default_factory=set)

    @property
    def provably_disabled(self) -> bool:
        if not self.constructions:
            return False
        return all(N.bool_value(N.keyword_arg_value(c.node, "enabled")) is False for c in self.constructions)


@dataclass(eq=False)
class Event:
    kind: str
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


EVENT_KINDS = (
    "scale_backward",  # scaler.scale(loss).backward()
    "backward",  # loss.backward()
    "autograd_backward",  # torch.autograd.backward(...)
    "autograd_grad",  # torch.autograd.grad(...)
    "scale",  # scaler.scale(x) not directly backwarded
    "unscale",  # scaler.unscale_(opt)
    "scaler_step",  # scaler.step(opt)
    "optimizer_step",  # opt.step()
    "update",  # scaler.update()
    "zero_grad",  # x.zero_grad()
    "clip",  # clip_grad_norm_ / clip_grad_value_
    "save",  # torch.save(...)
    "load_state_dict",  # x.load_state_dict(...)
)

_OPTIMIZER_NAME = re.compile(
    r"^_*(opt|optim|optimizer|optimiser|optimizers)(_\w+)?$|^\w+_(opt|optim|optimizer|optimiser)$|^(g|d)_?opt\w*$",
    re.IGNORECASE,
)
_OPTIMIZER_FACTORY = re.compile(r"(^|_)(create|build|get|make|configure|init)_optimi[sz]er", re.IGNORECASE)
_OPTIMIZER_CLASSES = frozenset(
    {"Adam", "AdamW", "SGD", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "LBFGS",
     "Adafactor", "Lion", "LAMB", "Lamb", "AdamW8bit", "Adam8bit", "PagedAdamW", "FusedAdam", "SparseAdam",
     "ZeroRedundancyOptimizer", "Muon"}
)


def is_optimizer_name(key: str) -> bool:
    last = key.rsplit(".", 1)[-1]
    if "sched" in last.lower():
        return False
    return bool(_OPTIMIZER_NAME.match(last))


def _bound_names(target: cst.CSTNode) -> set[str]:
    out: set[str] = set()
    if isinstance(target, cst.Name):
        out.add(target.value)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            out |= _bound_names(element.value)
    elif isinstance(target, cst.StarredElement):
        out |= _bound_names(target.value)
    return out


def _target_text(target: cst.CSTNode) -> str | None:
    text = N.dotted(target)
    if text is not None:
        return text
    if isinstance(target, cst.Subscript):
        base = N.dotted(target.value)
        return f"{base}[...]" if base else None
    return None


# --------------------------------------------------------------------------- the walk


class _Collector(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.module_scope: Scope | None = None
        self.scopes: list[Scope] = []
        self.scope_stack: list[Scope] = []
        self.loop_stack: list[Loop | None] = []  # None marks a function boundary
        self.with_stack: list[cst.With | None] = []
        self.branch_stack: list[Branch | None] = []
        self.stmt_stack: list[cst.CSTNode] = []
        self.order = 0
        self.calls: list[CallSite] = []
        self.call_by_node: dict[cst.Call, CallSite] = {}
        self.assignments: list[Assignment] = []
        self.references: list[Reference] = []
        self.imports: list[ImportRecord] = []
        self.functions: list[FunctionInfo] = []
        self.function_by_node: dict[cst.FunctionDef, FunctionInfo] = {}
        self.loops: list[Loop] = []
        self.withs: list[tuple[cst.With, Context]] = []
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}  # statement/block -> its owner
        self.returns: list[tuple[cst.BaseExpression, Context]] = []
        self.yields: list[Context] = []
        self._decorator_depth = 0
        self._reference_parent: list[tuple[cst.CSTNode, str]] = []

    # -- context helpers
    def _frame(self, stack: list) -> tuple:
        out = []
        for item in reversed(stack):
            if item is None:
                break
            out.append(item)
        return tuple(reversed(out))

    def context(self) -> Context:
        self.order += 1
        return Context(
            scope=self.scope_stack[-1].function if self.scope_stack else self.module_scope,  # type: ignore[arg-type]
            loops=self._frame(self.loop_stack),
            withs=self._frame(self.with_stack),
            branches=self._frame(self.branch_stack),
            stmt=self.stmt_stack[-1] if self.stmt_stack else None,
            order=self.order,
        )

    @property
    def scope(self) -> Scope:
        return self.scope_stack[-1]

    def _push_scope(self, kind: str, node: cst.CSTNode, name: str) -> Scope:
        scope = Scope(kind, node, self.scope_stack[-1] if self.scope_stack else None, name)
        self.scopes.append(scope)
        self.scope_stack.append(scope)
        return scope

    # -- blocks and statements: remember owners so fixes can move statements
    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.IndentedBlock, cst.SimpleStatementSuite)):
            for child in node.body:
                self.parents[child] = node
        return super().on_visit(node)

    def visit_Module(self, node: cst.Module) -> None:
        self.module_scope = self._push_scope("module", node, "<module>")
        for child in node.body:
            self.parents[child] = node

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.stmt_stack.append(node)

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine) -> None:
        self.stmt_stack.pop()

    def _enter_compound(self, node: cst.CSTNode) -> None:
        self.stmt_stack.append(node)
        for attr in ("body", "orelse", "finalbody"):
            block = getattr(node, attr, None)
            if isinstance(block, cst.BaseSuite):
                self.parents[block] = node
            elif block is not None and hasattr(block, "body") and isinstance(block.body, cst.BaseSuite):
                self.parents[block] = node
                self.parents[block.body] = block

    # -- scopes
    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._enter_compound(node)
        outer = self.context()
        self.scope.bind(node.name.value, "local")
        for decorator in node.decorators:
            self._decorator_depth += 1
            self._reference_parent.append((decorator, "decorator"))
            decorator.visit(self)
            self._reference_parent.pop()
            self._decorator_depth -= 1
        class_scope = self.scope if self.scope.kind == "class" else None
        scope = self._push_scope("function", node, node.name.value)
        params = []
        for param in (
            list(node.params.posonly_params)
            + list(node.params.params)
            + list(node.params.kwonly_params)
            + [p for p in (node.params.star_arg, node.params.star_kwarg) if isinstance(p, cst.Param)]
        ):
            params.append(param.name.value)
            scope.bind(param.name.value, "local")
            if param.default is not None:
                param.default.visit(self)
        info = FunctionInfo(node, scope, class_scope.name if class_scope else None, tuple(params), outer)
        self.functions.append(info)
        self.function_by_node[node] = info
        self.loop_stack.append(None)
        self.with_stack.append(None)
        self.branch_stack.append(None)
        node.body.visit(self)
        self.loop_stack.pop()
        self.with_stack.pop()
        self.branch_stack.pop()
        self.scope_stack.pop()
        self.stmt_stack.pop()
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return True

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._enter_compound(node)
        self.scope.bind(node.name.value, "local")
        for decorator in node.decorators:
            decorator.visit(self)
        for base in node.bases:
            base.visit(self)
        self._push_scope("class", node, node.name.value)
        node.body.visit(self)
        self.scope_stack.pop()
        self.stmt_stack.pop()
        return False

    # -- imports
    def visit_Import(self, node: cst.Import) -> bool:
        aliases = []
        for alias in node.names:
            full = N.module_name(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                bound, target = alias.asname.name.value, full
            else:
                bound = full.split(".")[0]
                target = bound
            self.scope.bind(bound, "import", target)
            aliases.append((alias, bound, target))
        self.imports.append(ImportRecord(node, self.stmt_stack[-1] if self.stmt_stack else None, self.scope, tuple(aliases), self.context()))
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.relative:
            module = "." * len(node.relative) + N.module_name(node.module)
        else:
            module = N.module_name(node.module)
        aliases = []
        if not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                name = N.module_name(alias.name)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    bound = alias.asname.name.value
                else:
                    bound = name
                target = f"{module}.{name}" if not node.relative else f"{module}{name}"
                self.scope.bind(bound, "import", target if not node.relative else None)
                aliases.append((alias, bound, target))
        self.imports.append(ImportRecord(node, self.stmt_stack[-1] if self.stmt_stack else None, self.scope, tuple(aliases), self.context()))
        return False

    # -- assignments
    def _bind_target(self, target: cst.CSTNode) -> None:
        for name in _bound_names(target):
            self.scope.bind(name, "local")

    def _record_assignment(self, node: cst.CSTNode, targets: list[cst.CSTNode], value: cst.BaseExpression | None) -> None:
        texts: list[str] = []
        keys: list[tuple[str, str | None]] = []
        for target in targets:
            self._bind_target(target)
            text = _target_text(target)
            if text is not None:
                texts.append(text)
            if isinstance(target, cst.Subscript) and len(target.slice) == 1:
                base = N.dotted(target.value)
                element = target.slice[0].slice
                key = N.string_value(element.value) if isinstance(element, cst.Index) else None
                if base:
                    keys.append((base, key))
            if isinstance(target, (cst.Tuple, cst.List)):
                for element in target.elements:
                    text = _target_text(element.value)
                    if text is not None:
                        texts.append(text)
        self.assignments.append(Assignment(tuple(texts), value, node, self.context(), tuple(keys)))

    def visit_Assign(self, node: cst.Assign) -> None:
        self._record_assignment(node, [t.target for t in node.targets], node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._record_assignment(node, [node.target], node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._record_assignment(node, [node.target], None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._record_assignment(node, [node.target], node.value)

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.returns.append((node.value, self.context()))

    def visit_Yield(self, node: cst.Yield) -> None:
        self.yields.append(self.context())

    # -- control flow
    def visit_For(self, node: cst.For) -> bool:
        self._enter_compound(node)
        self._bind_target(node.target)
        node.iter.visit(self)
        node.target.visit(self)
        loop = Loop(node, self.scope.function, self._frame(self.loop_stack)[-1] if self._frame(self.loop_stack) else None, self.order)
        self.loops.append(loop)
        self.loop_stack.append(loop)
        node.body.visit(self)
        self.loop_stack.pop()
        if node.orelse is not None:
            node.orelse.visit(self)
        self.stmt_stack.pop()
        return False

    def visit_While(self, node: cst.While) -> bool:
        self._enter_compound(node)
        loop = Loop(node, self.scope.function, self._frame(self.loop_stack)[-1] if self._frame(self.loop_stack) else None, self.order)
        self.loops.append(loop)
        self.loop_stack.append(loop)
        node.test.visit(self)
        node.body.visit(self)
        self.loop_stack.pop()
        if node.orelse is not None:
            node.orelse.visit(self)
        self.stmt_stack.pop()
        return False

    def visit_If(self, node: cst.If) -> bool:
        self._enter_compound(node)
        node.test.visit(self)
        self.branch_stack.append(Branch(node, "body"))
        node.body.visit(self)
        self.branch_stack.pop()
        if node.orelse is not None:
            self.branch_stack.append(Branch(node, "orelse"))
            node.orelse.visit(self)
            self.branch_stack.pop()
        self.stmt_stack.pop()
        return False

    def visit_Try(self, node: cst.Try) -> bool:
        self._enter_compound(node)
        for part, blocks in (
            ("body", [node.body]),
            ("handler", list(node.handlers)),
            ("orelse", [node.orelse] if node.orelse else []),
            ("finally", [node.finalbody] if node.finalbody else []),
        ):
            for block in blocks:
                self.branch_stack.append(Branch(node, part))
                block.visit(self)
                self.branch_stack.pop()
        self.stmt_stack.pop()
        return False

    def visit_With(self, node: cst.With) -> bool:
        self._enter_compound(node)
        self.withs.append((node, self.context()))
        for item in node.items:
            item.visit(self)
        self.with_stack.append(node)
        node.body.visit(self)
        self.with_stack.pop()
        self.stmt_stack.pop()
        return False

    def visit_Match(self, node: cst.CSTNode) -> None:
        self._enter_compound(node)

    def leave_Match(self, original_node: cst.CSTNode) -> None:
        self.stmt_stack.pop()

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind_target(node.target)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._bind_target(node.name.name)

    # -- calls and references
    def visit_Call(self, node: cst.Call) -> bool:
        parent_call = None
        statement = self.stmt_stack[-1] if self.stmt_stack else None
        is_expr_stmt = (
            isinstance(statement, cst.SimpleStatementLine)
            and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr)
            and statement.body[0].value is node
        )
        site = CallSite(
            node=node,
            ctx=self.context(),
            func_text=N.dotted(node.func),
            parent_call=parent_call,
            is_expression_statement=is_expr_stmt,
            in_decorator=self._decorator_depth > 0,
        )
        self.calls.append(site)
        self.call_by_node[node] = site
        self._reference_parent.append((node, "call"))
        node.func.visit(self)
        self._reference_parent.pop()
        self._reference_parent.append((node, "other"))
        for arg in node.args:
            arg.visit(self)
        self._reference_parent.pop()
        return False

    def _record_reference(self, node: cst.CSTNode, parts: list[str]) -> None:
        parent, role = self._reference_parent[-1] if self._reference_parent else (None, "other")
        if role == "call" and isinstance(parent, cst.Call) and parent.func is not node:
            role = "other"
        if role == "decorator" and isinstance(parent, cst.Decorator) and parent.decorator is not node:
            role = "other"
        self.references.append(Reference(node, tuple(parts), self.context(), parent, role))

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        parts = N.dotted_parts(node)
        if parts is not None:
            self._record_reference(node, parts)
            return False
        self._reference_parent.append((node, "other"))
        node.value.visit(self)
        self._reference_parent.pop()
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self._record_reference(node, [node.value])

    def visit_Decorator(self, node: cst.Decorator) -> bool:
        return True

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Param(self, node: cst.Param) -> bool:
        return False

    def visit_Subscript(self, node: cst.Subscript) -> bool:
        self._reference_parent.append((node, "other"))
        node.value.visit(self)
        for element in node.slice:
            element.visit(self)
        self._reference_parent.pop()
        return False


# --------------------------------------------------------------------------- derived facts


class FileFacts:
    """Everything rules may ask about one module."""

    def __init__(self, module: cst.Module, positions: dict[cst.CSTNode, CodeRange], path: str, settings: object = None):
        self.module = module
        self.path = path
        self.settings = settings
        self._positions = positions
        collector = _Collector()
        module.visit(collector)
        self._c = collector
        self.scopes = collector.scopes
        self.calls = collector.calls
        self.assignments = collector.assignments
        self.references = collector.references
        self.imports = collector.imports
        self.functions = collector.functions
        self.loops = collector.loops
        self.parents = collector.parents
        for site in self.calls:
            site.qualname = self.qualname(site.node.func, site.ctx.scope)
            if site.qualname is None and site.func_text is not None:
                site.qualname = None

    # -- positions and source
    def position(self, node: cst.CSTNode) -> CodeRange:
        return self._positions[node]

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    @cached_property
    def lines(self) -> list[str]:
        return self.module.code.splitlines()

    # -- name resolution
    def lookup(self, name: str, scope: Scope) -> str | None:
        """The qualified name an unqualified ``name`` is imported as, seen from ``scope``."""
        current: Scope | None = scope
        first = True
        while current is not None:
            if current.kind == "class" and not first:
                current = current.parent
                continue
            bindings = current.bindings.get(name)
            if bindings:
                targets = {target for kind, target in bindings if kind == "import"}
                if any(kind == "local" for kind, _ in bindings) or len(targets) != 1:
                    return None
                target = next(iter(targets))
                return target
            first = False
            current = current.parent
        return None

    def import_binding(self, name: str, scope: Scope) -> tuple[ImportRecord, cst.ImportAlias, str] | None:
        """The import statement and alias that bind ``name`` as seen from ``scope``."""
        current: Scope | None = scope
        first = True
        while current is not None:
            if current.kind == "class" and not first:
                current = current.parent
                continue
            if name in current.bindings:
                if self.lookup(name, scope) is None:
                    return None
                for record in reversed(self.imports):
                    if record.scope is current:
                        for alias, bound, target in record.aliases:
                            if bound == name:
                                return record, alias, target
                return None
            first = False
            current = current.parent
        return None

    def qualname(self, node: cst.CSTNode, scope: Scope) -> str | None:
        parts = N.dotted_parts(node)
        if not parts:
            return None
        head = self.lookup(parts[0], scope)
        if head is None:
            return None
        return N.canonical(".".join([head, *parts[1:]]))

    def resolves_to(self, node: cst.CSTNode, scope: Scope, names: Iterable[str]) -> bool:
        return self.qualname(node, scope) in set(names)

    @cached_property
    def import_bound_names(self) -> set[str]:
        return {name for scope in self.scopes for name, b in scope.bindings.items() if any(k == "import" for k, _ in b)}

    def references_to(self, predicate) -> Iterator[tuple[Reference, str]]:
        """References whose canonical qualified name satisfies ``predicate``."""
        bound = self.import_bound_names
        for ref in self.references:
            if ref.parts[0] not in bound:
                continue
            qualname = self.qualname(ref.node, ref.ctx.scope)
            if qualname is not None and predicate(qualname):
                yield ref, qualname

    # -- functions
    @cached_property
    def functions_by_name(self) -> dict[str, list[FunctionInfo]]:
        out: dict[str, list[FunctionInfo]] = {}
        for info in self.functions:
            out.setdefault(info.node.name.value, []).append(info)
        return out

    def function_of(self, scope: Scope) -> FunctionInfo | None:
        node = scope.function.node
        return self._c.function_by_node.get(node) if isinstance(node, cst.FunctionDef) else None

    def called_functions(self, site: CallSite) -> list[FunctionInfo]:
        """Same-file functions a call may run: ``f(...)``, ``self.f(...)``, ``cls.f(...)``."""
        text = site.func_text
        if text is None:
            return []
        parts = text.split(".")
        if len(parts) == 1:
            if self.lookup(parts[0], site.ctx.scope) is not None:
                return []
            return [f for f in self.functions_by_name.get(parts[0], []) if f.class_name is None]
        if len(parts) == 2 and parts[0] in ("self", "cls"):
            own = self.function_of(site.ctx.scope)
            candidates = self.functions_by_name.get(parts[1], [])
            same_class = [f for f in candidates if own is not None and f.class_name == own.class_name]
            return same_class or [f for f in candidates if f.class_name is not None]
        return []

    # -- assignments
    def assignments_to(self, key: str, scope: Scope | None = None) -> list[Assignment]:
        out = [a for a in self.assignments if key in a.targets]
        if scope is not None:
            if key.startswith("self."):
                own = self.function_of(scope)
                out = [a for a in out if (fn := self.function_of(a.ctx.scope)) is not None and own is not None and fn.class_name == own.class_name]
            else:
                out = [a for a in out if a.ctx.scope is scope or a.ctx.scope.kind == "module"]
        return out

    # -- scalers
    def _value_calls(self, value: cst.BaseExpression | None) -> list[cst.Call]:
        """Calls that an assigned value may evaluate to (through ``a if c else b`` / ``or``)."""
        if isinstance(value, cst.Call):
            return [value]
        if isinstance(value, cst.IfExp):
            return self._value_calls(value.body) + self._value_calls(value.orelse)
        if isinstance(value, cst.BooleanOperation):
            return self._value_calls(value.left) + self._value_calls(value.right)
        return []

    @cached_property
    def scalers(self) -> dict[str, ScalerInfo]:
        out: dict[str, ScalerInfo] = {}

        def get(key: str) -> ScalerInfo:
            return out.setdefault(key, ScalerInfo(key))

        for assignment in self.assignments:
            for call in self._value_calls(assignment.value):
                site = self._c.call_by_node.get(call)
                if site is not None and site.qualname in N.SCALER_CLASSES:
                    for target in assignment.targets:
                        info = get(target)
                        info.constructions.append(site)
                        info.evidence.add("constructed")
        for site in self.calls:
            func = site.node.func
            if not isinstance(func, cst.Attribute):
                continue
            receiver = N.dotted(func.value)
            method = func.attr.value
            if method == "unscale_" and receiver is not None:
                get(receiver).evidence.add("unscale_")
            elif method == "backward" and isinstance(func.value, cst.Call):
                inner = func.value
                if isinstance(inner.func, cst.Attribute) and inner.func.attr.value == "scale":
                    scaler = N.dotted(inner.func.value)
                    if scaler is not None and len(inner.args) == 1:
                        get(scaler).evidence.add("scale-backward")
            elif method == "step" and receiver is not None and "scaler" in receiver.rsplit(".", 1)[-1].lower() and len(N.positional_args(site.node)) == 1:
                get(receiver).evidence.add("named-step")
        return out

    def is_scaler(self, key: str | None) -> bool:
        return key is not None and key in self.scalers

    # -- optimizers
    @cached_property
    def optimizers(self) -> set[str]:
        keys: set[str] = set()
        for assignment in self.assignments:
            for call in self._value_calls(assignment.value):
                site = self._c.call_by_node.get(call)
                if site is None:
                    continue
                qualname = site.qualname or ""
                last = (site.func_text or "").rsplit(".", 1)[-1]
                if (
                    (qualname.startswith("torch.optim.") and ".lr_scheduler" not in qualname and ".swa_utils" not in qualname)
                    or (last in _OPTIMIZER_CLASSES and (qualname == "" or "sched" not in qualname))
                    or _OPTIMIZER_FACTORY.search(last)
                ):
                    keys.update(assignment.targets)
        for site in self.calls:
            func = site.node.func
            if not isinstance(func, cst.Attribute):
                continue
            receiver = N.dotted(func.value)
            method = func.attr.value
            if method in ("step", "unscale_") and self.is_scaler(receiver):
                args = N.positional_args(site.node)
                if args:
                    text = N.dotted(args[0].value)
                    if text is not None:
                        keys.add(text)
            elif method in ("zero_grad", "step") and receiver is not None and is_optimizer_name(receiver):
                keys.add(receiver)
        return {k for k in keys if not self.is_scaler(k)}

    def is_optimizer(self, key: str | None) -> bool:
        return key is not None and (key in self.optimizers)

    # -- autocast regions
    def _autocast_from_call(self, call: cst.Call, scope: Scope, depth: int = 0) -> AutocastRegion | None:
        """The autocast region a context-manager expression creates, if it is one."""
        qualname = self.qualname(call.func, scope)
        if qualname in N.AUTOCAST:
            return self._region_for_autocast_call(call, call, qualname)
        if qualname in N.PARTIAL and call.args:
            inner = self.qualname(call.args[0].value, scope)
            if inner in N.AUTOCAST:
                return self._region_for_autocast_call(call, call, inner, partial=True)
        if depth > 2:
            return None
        # A factory stored in a variable: ``amp_autocast = partial(torch.autocast, ...)``.
        text = N.dotted(call.func)
        if text is not None:
            for assignment in self.assignments_to(text, scope):
                for value_call in self._value_calls(assignment.value):
                    region = self._autocast_from_call(value_call, assignment.ctx.scope, depth + 1)
                    if region is not None and region.call is not None and self.qualname(value_call.func, assignment.ctx.scope) in N.PARTIAL:
                        return region
        # A helper that returns or yields an autocast: ``with self.maybe_autocast():``.
        site = self._c.call_by_node.get(call)
        if site is not None:
            for function in self.called_functions(site):
                region = self._function_autocast(function, depth + 1)
                if region is not None:
                    return region
        return None

    def _region_for_autocast_call(self, node_call: cst.Call, args_call: cst.Call, qualname: str, partial: bool = False) -> AutocastRegion:
        offset = 1 if partial else 0
        deprecated = None
        if qualname == "torch.cuda.amp.autocast":
            deprecated, device = "cuda", "cuda"
            dtype_node = N.argument(args_call, 1 + offset, "dtype")
            enabled_node = N.argument(args_call, 0 + offset, "enabled")
        elif qualname == "torch.cpu.amp.autocast":
            deprecated, device = "cpu", "cpu"
            dtype_node = N.argument(args_call, 1 + offset, "dtype")
            enabled_node = N.argument(args_call, 0 + offset, "enabled")
        else:
            device_node = N.argument(args_call, 0 + offset, "device_type")
            device = N.string_value(device_node)
            if device is not None:
                device = device.split(":")[0]
            dtype_node = N.argument(args_call, 1 + offset, "dtype")
            enabled_node = N.argument(args_call, 2 + offset, "enabled")
        return AutocastRegion(
            node=node_call,
            call=args_call,
            device=device,
            dtype=self.dtype_name(dtype_node),
            enabled=N.bool_value(enabled_node) if enabled_node is not None else True,
            resolved=True,
            deprecated=deprecated,
        )

    def dtype_name(self, node: cst.CSTNode | None) -> str | None:
        """``torch.float16`` / ``torch.half`` / ``"bfloat16"`` as a canonical dtype name."""
        if node is None:
            return None
        text = N.dotted(node) or N.string_value(node)
        if text is None:
            return None
        last = text.rsplit(".", 1)[-1]
        return {
            "float16": "float16", "half": "float16", "fp16": "float16",
            "bfloat16": "bfloat16", "bf16": "bfloat16",
            "float32": "float32", "float": "float32", "fp32": "float32",
            "float64": "float64", "double": "float64",
        }.get(last)

    def _function_autocast(self, function: FunctionInfo, depth: int) -> AutocastRegion | None:
        for value, ctx in self._c.returns:
            if ctx.scope is not function.scope:
                continue
            region = self._expression_autocast(value, ctx.scope, depth)
            if region is not None:
                return region
        for ctx in self._c.yields:
            if ctx.scope is function.scope and ctx.withs:
                for with_node in ctx.withs:
                    for region in self._with_item_regions(with_node, ctx.scope, depth):
                        return region
        return None

    def _expression_autocast(self, value: cst.BaseExpression, scope: Scope, depth: int) -> AutocastRegion | None:
        conditional = isinstance(value, (cst.IfExp, cst.BooleanOperation))
        for call in self._value_calls(value):
            region = self._autocast_from_call(call, scope, depth)
            if region is not None:
                region.conditional = region.conditional or conditional
                return region
        text = N.dotted(value)
        if text is not None and depth <= 2:
            for assignment in self.assignments_to(text, scope):
                if assignment.value is not None and assignment.value is not value:
                    region = self._expression_autocast(assignment.value, assignment.ctx.scope, depth + 1)
                    if region is not None:
                        region.conditional = True if len(self.assignments_to(text, scope)) > 1 else region.conditional
                        return region
        return None

    def _with_item_regions(self, node: cst.With, scope: Scope, depth: int = 0) -> list[AutocastRegion]:
        regions = []
        for item in node.items:
            region = self._expression_autocast(item.item, scope, depth)
            if region is None:
                region = self._named_autocast(item.item)
            if region is not None:
                region.node = node
                regions.append(region)
        return regions

    def _named_autocast(self, expr: cst.BaseExpression) -> AutocastRegion | None:
        """``with amp_autocast():`` / ``with self.autocast_ctx:`` where nothing resolves: named like autocast."""
        target = expr.func if isinstance(expr, cst.Call) else expr
        text = N.dotted(target)
        if text is None or "autocast" not in text.rsplit(".", 1)[-1].lower():
            return None
        enabled = None
        if isinstance(expr, cst.Call):
            enabled_node = N.keyword_arg_value(expr, "enabled")
            if enabled_node is not None:
                enabled = N.bool_value(enabled_node)
        return AutocastRegion(node=expr, call=None, device=None, dtype=None, enabled=enabled, resolved=False)

    @cached_property
    def autocast_regions(self) -> dict[cst.CSTNode, list[AutocastRegion]]:
        """``with`` statements and decorated functions that run under autocast."""
        out: dict[cst.CSTNode, list[AutocastRegion]] = {}
        for node, ctx in self._c.withs:
            regions = self._with_item_regions(node, ctx.scope)
            if regions:
                out[node] = regions
        for function in self.functions:
            for decorator in function.node.decorators:
                expr = decorator.decorator
                if isinstance(expr, cst.Call):
                    qualname = self.qualname(expr.func, function.ctx.scope)
                    if qualname in N.AUTOCAST:
                        region = self._region_for_autocast_call(expr, expr, qualname)
                        region.node = function.node
                        out.setdefault(function.node, []).append(region)
        return out

    def enclosing_autocast(self, ctx: Context, enabled_only: bool = True) -> list[AutocastRegion]:
        """Autocast regions lexically around a node (innermost last)."""
        regions: list[AutocastRegion] = []
        function = self.function_of(ctx.scope)
        if function is not None:
            regions.extend(self.autocast_regions.get(function.node, []))
        for with_node in ctx.withs:
            regions.extend(self.autocast_regions.get(with_node, []))
        if enabled_only:
            # An inner ``autocast(enabled=False)`` switches autocast off for its body.
            active: list[AutocastRegion] = []
            for region in regions:
                if region.enabled is False:
                    active = []
                else:
                    active.append(region)
            return active
        return regions

    # -- events
    @cached_property
    def events(self) -> list[Event]:
        """Training-step events in source order (the walk's order)."""
        out: list[Event] = []
        consumed: set[cst.Call] = set()
        for site in self.calls:
            event = self._classify(site, consumed)
            if event is not None:
                out.append(event)
        return [e for e in out if not (e.kind == "scale" and e.call in consumed)]

    def _classify(self, site: CallSite, consumed: set[cst.Call]) -> Event | None:
        call = site.node
        qualname = site.qualname
        if qualname == "torch.autograd.backward":
            return Event("autograd_backward", site)
        if qualname == "torch.autograd.grad":
            return Event("autograd_grad", site)
        if qualname in N.CLIP_FUNCTIONS:
            return Event("clip", site)
        if qualname == "torch.save":
            return Event("save", site)
        func = call.func
        if not isinstance(func, cst.Attribute):
            return None
        method = func.attr.value
        receiver = N.dotted(func.value)
        if method == "backward":
            inner = func.value
            if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and inner.func.attr.value == "scale":
                scaler = N.dotted(inner.func.value)
                if self.is_scaler(scaler):
                    consumed.add(inner)
                    return Event("scale_backward", site, scaler=scaler)
            return Event("backward", site, receiver=receiver)
        if receiver is None:
            return None
        if self.is_scaler(receiver):
            args = N.positional_args(call)
            optimizer = N.dotted(args[0].value) if args else None
            kind = {"scale": "scale", "unscale_": "unscale", "step": "scaler_step", "update": "update", "load_state_dict": "load_state_dict"}.get(method)
            if kind is not None:
                return Event(kind, site, scaler=receiver, optimizer=optimizer if kind in ("unscale", "scaler_step") else None, receiver=receiver)
            return None
        if method == "step" and self.is_optimizer(receiver) and len(call.args) <= 1:
            return Event("optimizer_step", site, optimizer=receiver, receiver=receiver)
        if method == "zero_grad":
            return Event("zero_grad", site, optimizer=receiver if self.is_optimizer(receiver) else None, receiver=receiver)
        if method in ("clip_grad_norm_", "clip_grad_value_") and receiver.split(".")[0] not in ("accelerator", "fabric", "self", "trainer", "strategy"):
            return Event("clip", site, receiver=receiver)
        if method == "load_state_dict":
            return Event("load_state_dict", site, optimizer=receiver if self.is_optimizer(receiver) else None, receiver=receiver)
        return None

    def events_in(self, scope: Scope) -> list[Event]:
        return [e for e in self.events if e.ctx.scope is scope]

    @cached_property
    def events_by_scope(self) -> dict[Scope, list[Event]]:
        out: dict[Scope, list[Event]] = {}
        for event in self.events:
            out.setdefault(event.ctx.scope, []).append(event)
        return out

    # -- training loops and per-step functions
    @cached_property
    def training_functions(self) -> set[Scope]:
        """Function scopes that (transitively, within this file) run a backward or an optimizer step."""
        direct = {
            e.ctx.scope
            for e in self.events
            if e.kind in ("scale_backward", "backward", "autograd_backward", "scaler_step", "optimizer_step")
        }
        result = set(direct)
        changed = True
        while changed:
            changed = False
            for site in self.calls:
                if site.ctx.scope in result:
                    continue
                if any(f.scope in result for f in self.called_functions(site)):
                    result.add(site.ctx.scope)
                    changed = True
        return result

    def _loop_runs_training(self, loop: Loop) -> bool:
        for event in self.events_by_scope.get(loop.scope, []):
            if loop in event.ctx.loops and event.kind in (
                "scale_backward", "backward", "autograd_backward", "scaler_step", "optimizer_step"
            ):
                return True
        for site in self.calls:
            if site.ctx.scope is loop.scope and loop in site.ctx.loops:
                if any(f.scope in self.training_functions for f in self.called_functions(site)):
                    return True
        return False

    @cached_property
    def training_loops(self) -> set[Loop]:
        return {loop for loop in self.loops if self._loop_runs_training(loop)}

    PER_STEP_NAMES = frozenset(
        {"train_step", "training_step", "train_one_epoch", "train_epoch", "run_step", "train_batch",
         "training_epoch", "_train_step", "_training_step", "_train_one_epoch", "_train_epoch", "train_on_batch",
         "step", "_do_train_step", "optimize_step", "optimizer_step"}
    )

    @cached_property
    def per_step_functions(self) -> set[Scope]:
        """Functions called once per step or epoch: named so, or called inside a training loop here."""
        out: set[Scope] = set()
        for function in self.functions:
            if function.node.name.value in self.PER_STEP_NAMES:
                out.add(function.scope)
        for site in self.calls:
            if any(loop in self.training_loops for loop in site.ctx.loops):
                for function in self.called_functions(site):
                    out.add(function.scope)
        return out

    # -- statements
    def parent_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    def statement_block(self, stmt: cst.CSTNode) -> tuple[cst.CSTNode, list[cst.CSTNode]] | None:
        """The block holding ``stmt`` and that block's statements."""
        block = self.parents.get(stmt)
        if block is None:
            return None
        body = getattr(block, "body", None)
        if isinstance(body, (list, tuple)):
            return block, list(body)
        return None

    def indent_of(self, node: cst.CSTNode) -> str:
        line = self.lines[self.position(node).start.line - 1] if self.lines else ""
        return line[: len(line) - len(line.lstrip())]
