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
    # The expressions bound to ``device_type`` / ``dtype`` in the autocast call, when given
    # (``device`` holds only the literal type string; AMP015 needs to see ``torch.device(...)``).
    device_node: cst.BaseExpression | None = None
    dtype_node: cst.BaseExpression | None = None

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
class AutocastCall:
    """One call that builds an autocast object (see :attr:`FileFacts.autocast_calls`)."""

    site: CallSite
    region: AutocastRegion  # its arguments read as a region (``region.call`` is the call)
    qualname: str  # canonical autocast class (``torch.amp.autocast``, ``torch.cuda.amp.autocast`` ...)
    partial: bool = False  # ``functools.partial(torch.autocast, ...)``: arguments start at index 1

    @property
    def call(self) -> cst.Call:
        return self.site.node


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


def _balanced(text: str) -> bool:
    """Parentheses in ``text`` never close more than they opened (so outer ones may be stripped)."""
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


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


def _parameters_owner(node: cst.CSTNode | None) -> str | None:
    """``model`` for ``model.parameters()`` / ``model.named_parameters()``-style arguments."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "parameters":
        return N.dotted(node.func.value)
    return None


def _target_text(target: cst.CSTNode) -> str | None:
    text = N.dotted(target)
    if text is not None:
        return text
    if isinstance(target, cst.Subscript):
        base = N.dotted(target.value)
        return f"{base}[...]" if base else None
    return None


# --------------------------------------------------------------------------- the walk


_VISIT: dict[type, tuple] = {}
_FIELDS: dict[type, tuple[str, ...]] = {}
_SKIPPED_TYPES = (
    cst.BaseParenthesizableWhitespace, cst.TrailingWhitespace, cst.EmptyLine, cst.Newline, cst.Comment,
    cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace,
    cst.RightCurlyBrace, cst.Comma, cst.Dot, cst.Colon, cst.Semicolon, cst.AssignEqual,
)


_WALKED: dict[type, bool] = {}  # type -> is a node the walk enters (cached: CSTNode checks go through ABCs)


def _walked(kind: type) -> bool:
    walked = _WALKED.get(kind)
    if walked is None:
        walked = _WALKED[kind] = issubclass(kind, cst.CSTNode) and not issubclass(kind, _SKIPPED_TYPES)
    return walked


def _children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Child nodes in field order (source order for everything the facts pass reads)."""
    kind = type(node)
    names = _FIELDS.get(kind)
    if names is None:
        import dataclasses

        names = _FIELDS[kind] = tuple(
            f.name for f in dataclasses.fields(node)
            if not f.name.startswith(("whitespace", "lpar", "rpar", "leading_lines", "lines_after", "header", "footer", "semicolon", "comma"))
        )
    out = []
    for name in names:
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            out.extend(item for item in value if _walked(type(item)))
        elif _walked(kind):
            out.append(value)
    return out


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
        self.spans: dict[cst.CSTNode, list[int]] = {}  # node -> [enter, exit] walk numbers
        self._tick = 0
        self.returns: list[tuple[cst.BaseExpression, Context]] = []
        self.if_statements: list[tuple[cst.If, Context]] = []
        self.conditional_expressions: list[cst.IfExp] = []
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
    # libcst's own traversal rebuilds every node it passes (dataclass construction
    # and validation), which costs more than parsing; this read-only walk follows
    # the same visit_/leave_ protocol over each node's fields, skipping whitespace.
    def walk(self, node: cst.CSTNode) -> None:
        kind = type(node)
        visit = _VISIT.get(kind)
        if visit is None:
            name = kind.__name__
            visit = _VISIT[kind] = (getattr(type(self), f"visit_{name}", None), getattr(type(self), f"leave_{name}", None))
        enter, leave = visit
        self._tick += 1
        span = self.spans[node] = [self._tick, 0]
        if kind is cst.IndentedBlock or kind is cst.SimpleStatementSuite:
            for child in node.body:
                self.parents[child] = node
        if enter is None or enter(self, node) is not False:
            for child in _children(node):
                self.walk(child)
        if leave is not None:
            leave(self, node)
        self._tick += 1
        span[1] = self._tick

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
            self.walk(decorator)
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
                self.walk(param.default)
        info = FunctionInfo(node, scope, class_scope.name if class_scope else None, tuple(params), outer)
        self.functions.append(info)
        self.function_by_node[node] = info
        self.loop_stack.append(None)
        self.with_stack.append(None)
        self.branch_stack.append(None)
        self.walk(node.body)
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
            self.walk(decorator)
        for base in node.bases:
            self.walk(base)
        self._push_scope("class", node, node.name.value)
        self.walk(node.body)
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

    def visit_Assign(self, node: cst.Assign) -> bool:
        self._record_assignment(node, [t.target for t in node.targets], node.value)
        self._walk_assignment(node.value, [t.target for t in node.targets])
        return False

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        self._record_assignment(node, [node.target], node.value)
        self.walk(node.annotation)
        self._walk_assignment(node.value, [node.target])
        return False

    def _walk_assignment(self, value: cst.BaseExpression | None, targets: list[cst.CSTNode]) -> None:
        """Walk the value, then the targets except bare names: binding a name is not a use of it."""
        if value is not None:
            self.walk(value)
        for target in targets:
            if not isinstance(target, cst.Name):
                self.walk(target)

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
        self.walk(node.iter)
        self.walk(node.target)
        loop = Loop(node, self.scope.function, self._frame(self.loop_stack)[-1] if self._frame(self.loop_stack) else None, self.order)
        self.loops.append(loop)
        self.loop_stack.append(loop)
        self.walk(node.body)
        self.loop_stack.pop()
        if node.orelse is not None:
            self.walk(node.orelse)
        self.stmt_stack.pop()
        return False

    def visit_While(self, node: cst.While) -> bool:
        self._enter_compound(node)
        loop = Loop(node, self.scope.function, self._frame(self.loop_stack)[-1] if self._frame(self.loop_stack) else None, self.order)
        self.loops.append(loop)
        self.loop_stack.append(loop)
        self.walk(node.test)
        self.walk(node.body)
        self.loop_stack.pop()
        if node.orelse is not None:
            self.walk(node.orelse)
        self.stmt_stack.pop()
        return False

    def visit_If(self, node: cst.If) -> bool:
        self._enter_compound(node)
        self.if_statements.append((node, self.context()))
        self.walk(node.test)
        self.branch_stack.append(Branch(node, "body"))
        self.walk(node.body)
        self.branch_stack.pop()
        if node.orelse is not None:
            self.branch_stack.append(Branch(node, "orelse"))
            self.walk(node.orelse)
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
                self.walk(block)
                self.branch_stack.pop()
        self.stmt_stack.pop()
        return False

    def visit_With(self, node: cst.With) -> bool:
        self._enter_compound(node)
        self.withs.append((node, self.context()))
        for item in node.items:
            self.walk(item)
        self.with_stack.append(node)
        self.walk(node.body)
        self.with_stack.pop()
        self.stmt_stack.pop()
        return False

    def visit_Match(self, node: cst.CSTNode) -> None:
        self._enter_compound(node)

    def leave_Match(self, original_node: cst.CSTNode) -> None:
        self.stmt_stack.pop()

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.conditional_expressions.append(node)

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
        self.walk(node.func)
        self._reference_parent.pop()
        self._reference_parent.append((node, "other"))
        for arg in node.args:
            self.walk(arg)
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
        self.walk(node.value)
        self._reference_parent.pop()
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self._record_reference(node, [node.value])

    def visit_Decorator(self, node: cst.Decorator) -> bool:
        return True

    def visit_Arg(self, node: cst.Arg) -> bool:
        self.walk(node.value)
        return False

    def visit_Param(self, node: cst.Param) -> bool:
        return False

    def visit_Subscript(self, node: cst.Subscript) -> bool:
        self._reference_parent.append((node, "other"))
        self.walk(node.value)
        for element in node.slice:
            self.walk(element)
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
        collector.walk(module)
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

    def call_site(self, node: cst.Call) -> CallSite | None:
        """The recorded :class:`CallSite` of a call node of this module."""
        return self._c.call_by_node.get(node)

    @classmethod
    def from_source(cls, code: str, path: str = "example.py", settings: object = None) -> "FileFacts":
        """Facts for a source text, as the engine builds them (for tests and tools)."""
        from amplint.positions import Positions

        module = cst.parse_module(code)
        return cls(module, Positions(module), path, settings)

    # -- compatibility fallbacks: old API used only where the new one is unavailable
    def _mentions(self, node: cst.CSTNode | None, predicate) -> bool:
        if node is None:
            return False
        return any(
            (q := self.qualname(ref.node, ref.ctx.scope)) is not None and predicate(q)
            for ref in self.references_within(node)
        )

    def is_compat_fallback(self, node: cst.CSTNode, ctx: Context, new_api) -> bool:
        """``node`` runs only when a newer API is unavailable.

        True in the ``except`` of a ``try`` whose body uses the new API, in the branch of
        an ``if``/conditional expression whose other branch uses it, and after
        ``if <new API available>: ... return`` (a version check alone proves nothing:
        the newer branch may still use the old names).
        """
        for branch in ctx.branches:
            owner = branch.node
            if isinstance(owner, cst.Try) and branch.part == "handler" and self._mentions(owner.body, new_api):
                return True
            if isinstance(owner, cst.If) and branch.part in ("body", "orelse"):
                other = owner.orelse if branch.part == "body" else owner.body
                if self._mentions(other, new_api):
                    return True
        for expression in self._c.conditional_expressions:
            if not self.contains(expression, node) or self.contains(expression.test, node):
                continue
            other = expression.orelse if self.contains(expression.body, node) else expression.body
            if self._mentions(other, new_api):
                return True
        for statement, if_ctx in self._c.if_statements:
            if if_ctx.scope is not ctx.scope or if_ctx.order > ctx.order or self.contains(statement, node):
                continue
            body = statement.body.body if isinstance(statement.body, cst.IndentedBlock) else ()
            returns = any(
                isinstance(small, cst.Return)
                for line in body[-1:]
                if isinstance(line, cst.SimpleStatementLine)
                for small in line.body
            )
            if returns and self._mentions(statement.body, new_api):
                return True
        return False

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
                if site is not None and self.is_scaler_construction(site):
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
            # A plain alias of the class: ``ac = torch.autocast`` then ``with ac("cuda"):``.
            alias = self.autocast_alias(text, scope)
            if alias is not None:
                return self._region_for_autocast_call(call, call, alias)
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
        device_node = None
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
            device_node=device_node,
            dtype_node=dtype_node,
        )

    def autocast_alias(self, text: str, scope: Scope) -> str | None:
        """The autocast class a name is a plain alias of (``ac = torch.autocast``), when proven.

        Only a name assigned exactly once (in ``scope`` or at module level) to a dotted name that
        resolves to an autocast class counts.
        """
        if text not in self._autocast_alias_targets:
            return None
        assignments = self.assignments_to(text, scope)
        if len(assignments) != 1:
            return None
        value = assignments[0].value
        if value is None or N.dotted(value) is None:
            return None
        qualname = self.qualname(value, assignments[0].ctx.scope)
        return qualname if qualname in N.AUTOCAST else None

    @cached_property
    def _autocast_alias_targets(self) -> set[str]:
        out: set[str] = set()
        for assignment in self.assignments:
            value = assignment.value
            if value is not None and N.dotted(value) is not None and self.qualname(value, assignment.ctx.scope) in N.AUTOCAST:
                out.update(assignment.targets)
        return out

    @cached_property
    def autocast_calls(self) -> list[AutocastCall]:
        """Every call that builds an autocast object, wherever it sits (``with``, decorator,
        assignment, return, ``partial(torch.autocast, ...)``, a plain alias of the class)."""
        out: list[AutocastCall] = []
        for site in self.calls:
            call, scope = site.node, site.ctx.scope
            qualname = site.qualname
            if qualname in N.AUTOCAST:
                out.append(AutocastCall(site, self._region_for_autocast_call(call, call, qualname), qualname))
                continue
            if qualname in N.PARTIAL and call.args and call.args[0].keyword is None and not call.args[0].star:
                inner = self.qualname(call.args[0].value, scope)
                if inner in N.AUTOCAST:
                    region = self._region_for_autocast_call(call, call, inner, partial=True)
                    out.append(AutocastCall(site, region, inner, partial=True))
                continue
            if qualname is None and site.func_text is not None:
                alias = self.autocast_alias(site.func_text, scope)
                if alias is not None:
                    out.append(AutocastCall(site, self._region_for_autocast_call(call, call, alias), alias))
        return out

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
        if method in ("clip_grad_norm_", "clip_grad_value_") and receiver != "self" and not (
            set(receiver.split(".")) & {"accelerator", "fabric", "trainer", "strategy", "engine", "deepspeed", "model_engine", "precision_plugin"}
        ):
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

    # -- training-step structure (AMP002-AMP004)
    def _names_scaler_class(self, node: cst.CSTNode | None, scope: Scope, depth: int = 0) -> bool:
        """``node`` is a GradScaler class: by name resolution or through an alias variable."""
        if node is None:
            return False
        if isinstance(node, cst.IfExp):
            return self._names_scaler_class(node.body, scope, depth) and self._names_scaler_class(node.orelse, scope, depth)
        if self.qualname(node, scope) in N.SCALER_CLASSES:
            return True
        text = N.dotted(node)
        if text is None or depth > 2:
            return False
        assignments = [a for a in self.assignments_to(text, scope) if a.value is not None and a.targets == (text,)]
        return bool(assignments) and all(self._names_scaler_class(a.value, a.ctx.scope, depth + 1) for a in assignments)

    def scaler_provably_disabled(self, key: str, scope: Scope) -> bool:
        """The scaler ``key`` as used in ``scope`` is built with ``enabled=False``.

        Constructions in ``scope`` itself decide when there are any (the same name is often built
        differently in several functions of one file); otherwise all of the file's constructions.
        """
        info = self.scalers.get(key)
        if info is None:
            return False
        local = [c for c in info.constructions if c.ctx.scope is scope]
        sites = local or info.constructions
        return bool(sites) and all(N.bool_value(N.keyword_arg_value(c.node, "enabled")) is False for c in sites)

    def is_scaler_construction(self, site: CallSite) -> bool:
        """``torch.amp.GradScaler(...)`` in any spelling, or through ``GS = torch.amp.GradScaler``."""
        if site.qualname in N.SCALER_CLASSES:
            return True
        if site.qualname is not None or site.func_text is None or "." in site.func_text:
            return False
        return self._names_scaler_class(site.node.func, site.ctx.scope)

    @cached_property
    def scaler_construction_sites(self) -> list[CallSite]:
        """Every call that builds a GradScaler, assigned or not."""
        return [site for site in self.calls if not site.in_decorator and self.is_scaler_construction(site)]

    @cached_property
    def calls_by_stmt(self) -> dict[cst.CSTNode, list[CallSite]]:
        """Innermost statement -> the calls written in it (a compound's header calls too)."""
        out: dict[cst.CSTNode, list[CallSite]] = {}
        for site in self.calls:
            if site.ctx.stmt is not None:
                out.setdefault(site.ctx.stmt, []).append(site)
        return out

    @cached_property
    def event_by_call(self) -> dict[cst.Call, Event]:
        return {event.call: event for event in self.events}

    @cached_property
    def loop_by_node(self) -> dict[cst.CSTNode, Loop]:
        return {loop.node: loop for loop in self.loops}

    def names_bound_in_loop(self, loop: Loop) -> set[str]:
        """Dotted names (re)bound in each iteration of ``loop``: loop targets and assignments in its body."""
        out: set[str] = set(loop.target_names)
        for inner in self.loops:
            if inner.scope is loop.scope and self.contains(loop.node, inner.node):
                out |= inner.target_names
        for assignment in self.assignments:
            if assignment.ctx.scope is loop.scope and loop in assignment.ctx.loops:
                for target in assignment.targets:
                    out.add(target.replace("[...]", ""))
        return out

    def outermost_training_loop(self, ctx: Context) -> Loop | None:
        """The outermost loop around ``ctx`` (same function) that runs training iterations."""
        for loop in ctx.loops:
            if loop in self.training_loops:
                return loop
        return None

    @cached_property
    def optimizer_builds(self) -> dict[str, list[Assignment]]:
        """Optimizer key -> the assignments that build it (``opt = torch.optim.AdamW(...)``)."""
        out: dict[str, list[Assignment]] = {}
        for assignment in self.assignments:
            if not isinstance(assignment.value, cst.Call):
                continue
            site = self._c.call_by_node.get(assignment.value)
            if site is None:
                continue
            qualname = site.qualname or ""
            last = (site.func_text or "").rsplit(".", 1)[-1]
            if (qualname.startswith("torch.optim.") and ".lr_scheduler" not in qualname and ".swa_utils" not in qualname) or (
                last in _OPTIMIZER_CLASSES and "sched" not in qualname
            ):
                for target in assignment.targets:
                    out.setdefault(target, []).append(assignment)
        return out

    def optimizer_parameter_owners(self, key: str) -> set[str] | None:
        """For ``opt = Adam(model.parameters())``: ``{"model"}``; ``None`` when not visible."""
        owners: set[str] = set()
        constructions = self.optimizer_builds.get(key)
        if not constructions:
            return None
        for assignment in constructions:
            call = assignment.value
            assert isinstance(call, cst.Call)
            params = N.argument(call, 0, "params")
            owner = _parameters_owner(params)
            if owner is None:
                return None
            owners.add(owner)
        return owners

    def clip_parameter_owner(self, call: cst.Call) -> str | None:
        """``model`` for ``clip_grad_norm_(model.parameters(), ...)`` / ``model.clip_grad_norm_(...)``."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("clip_grad_norm_", "clip_grad_value_"):
            site = self._c.call_by_node.get(call)
            if site is not None and site.qualname not in N.CLIP_FUNCTIONS:
                return N.dotted(func.value)
        return _parameters_owner(N.argument(call, 0, "parameters"))

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

    # -- scaler paths (AMP007-AMP012): exclusive branches, AMP gates, iterations
    BACKWARD_KINDS = ("scale_backward", "backward", "autograd_backward")

    def contains(self, outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
        """``inner`` is ``outer`` or lies inside it.

        Decided from the walk's enter/exit numbering, not from source positions:
        positions cost a full code generation of the module.
        """
        spans = self._c.spans
        o, i = spans.get(outer), spans.get(inner)
        if o is None or i is None:
            try:
                a, b = self.position(outer), self.position(inner)
            except KeyError:
                return False
            return (a.start.line, a.start.column) <= (b.start.line, b.start.column) and (
                b.end.line, b.end.column) <= (a.end.line, a.end.column)
        return o[0] <= i[0] and i[1] <= o[1]

    def condition_key(self, test: cst.BaseExpression) -> tuple[str, bool]:
        """A branch test as comparable text, and whether it is negated.

        ``not x`` / ``x is not None`` / ``a != b`` / ``k not in d`` give the text of the positive
        form with ``negated=True``, so ``if scaler is None`` and ``if scaler is not None`` compare.
        """
        negated = False
        while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test = test.expression
            negated = not negated
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            comparison = test.comparisons[0]
            operator = comparison.operator
            positive = {cst.IsNot: "is", cst.NotEqual: "==", cst.NotIn: "in"}
            for kind, text in positive.items():
                if isinstance(operator, kind):
                    negated = not negated
                    return f"{self._flat(test.left)} {text} {self._flat(comparison.comparator)}", negated
            name = {cst.Is: "is", cst.Equal: "==", cst.In: "in"}
            for kind, text in name.items():
                if isinstance(operator, kind):
                    return f"{self._flat(test.left)} {text} {self._flat(comparison.comparator)}", negated
        return self._flat(test), negated

    def _flat(self, node: cst.CSTNode) -> str:
        text = re.sub(r"\s+", "", self.code(node))
        while text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
            text = text[1:-1]
        return text

    def branch_key(self, branch: Branch) -> tuple[str, bool] | None:
        """(test text, runs when the test is true) for an ``if``/``elif``/``else`` branch."""
        if isinstance(branch.node, cst.If) and branch.part in ("body", "orelse"):
            text, negated = self.condition_key(branch.node.test)
            return text, (not negated) if branch.part == "body" else negated
        return None

    def exclusive(self, a: Context, b: Context) -> bool:
        """True when ``a`` and ``b`` never run in the same pass through their function.

        Opposite parts of one ``if`` (``if``/``elif``/``else`` chains included), a ``try`` handler
        and its ``else``, or opposite parts of two ``if`` statements with the same test
        (``if use_amp: ... else: ...`` written twice, ``if scaler is None`` / ``if scaler is not None``).
        """
        if a.scope is not b.scope:
            return False
        for ba in a.branches:
            for bb in b.branches:
                if ba.node is bb.node:
                    if ba.part != bb.part and (
                        {ba.part, bb.part} == {"body", "orelse"} or {ba.part, bb.part} == {"handler", "orelse"}
                    ):
                        return True
                    continue
                ka, kb = self.branch_key(ba), self.branch_key(bb)
                if ka is not None and kb is not None and ka[0] == kb[0] and ka[1] != kb[1]:
                    return True
        return False

    def on_path(self, a: Context, b: Context) -> bool:
        """``a`` and ``b`` are in one function and may run in the same pass through it."""
        return a.scope is b.scope and not self.exclusive(a, b)

    _AMP_TOKENS = frozenset(
        {"amp", "scaler", "scaling", "fp16", "float16", "half", "mixed", "precision", "autocast", "apex",
         "fp32", "float32", "bf16", "bfloat16", "dtype", "scale"}
    )

    def mentions_amp(self, expr: cst.CSTNode) -> bool:
        """The expression names something AMP-ish (``use_amp``, ``self.scaler``, ``args.fp16`` ...)."""
        for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", self.code(expr)):
            lowered = word.lower()
            if lowered in self._AMP_TOKENS or any(part in self._AMP_TOKENS for part in lowered.split("_")):
                return True
        return False

    def amp_gate(self, ctx: Context, other: Context | None = None) -> Branch | None:
        """An ``if`` branch around ``ctx`` that selects the AMP or the non-AMP path (its test
        mentions AMP, or the other part of the ``if`` scales or steps through a scaler), and that
        does not also enclose ``other``."""
        inside_other = set(other.branches) if other is not None else set()
        for branch in ctx.branches:
            if not isinstance(branch.node, cst.If) or branch in inside_other:
                continue
            if self.mentions_amp(branch.node.test):
                return branch
            for event in self.events_by_scope.get(ctx.scope, []):
                if event.kind in ("scale_backward", "scaler_step", "update", "unscale"):
                    for eb in event.ctx.branches:
                        if eb.node is branch.node and eb.part != branch.part:
                            return branch
        return None

    def is_accumulation_test(self, test: cst.BaseExpression) -> bool:
        """``(i + 1) % accum == 0`` / ``step % grad_accum_steps == 0`` / ``accelerator.sync_gradients``."""
        text = self.code(test)
        if "%" in text and not re.search(r"['\"]", text):
            return True
        lowered = text.lower()
        return "accum" in lowered or "sync_grad" in lowered or "update_freq" in lowered

    def accumulation_branch(self, ctx: Context) -> Branch | None:
        """The innermost ``if`` body around ``ctx`` whose test is an accumulation boundary."""
        for branch in reversed(ctx.branches):
            if isinstance(branch.node, cst.If) and branch.part == "body" and self.is_accumulation_test(branch.node.test):
                return branch
        return None

    def under_same_condition(self, ctx: Context, branch: Branch) -> bool:
        """``ctx`` runs only when ``branch`` runs: inside it, or inside an ``if`` with the same test and part."""
        key = self.branch_key(branch)
        for own in ctx.branches:
            if own == branch:
                return True
            if key is not None and self.branch_key(own) == key:
                return True
        return False

    @cached_property
    def backward_functions(self) -> set[Scope]:
        """Function scopes that (transitively, within this file) run a backward."""
        result = {e.ctx.scope for e in self.events if e.kind in self.BACKWARD_KINDS}
        return self._callers_closure(result)

    @cached_property
    def updating_functions(self) -> set[Scope]:
        """Function scopes that (transitively, within this file) call ``scaler.update()``."""
        return self._callers_closure({e.ctx.scope for e in self.events if e.kind == "update"})

    def _callers_closure(self, result: set[Scope]) -> set[Scope]:
        result = set(result)
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

    def calls_into(self, site: CallSite, scopes: set[Scope]) -> bool:
        return any(f.scope in scopes for f in self.called_functions(site))

    @cached_property
    def backward_loops(self) -> set[Loop]:
        """Loops whose body runs a backward (directly or through a same-file function)."""
        out: set[Loop] = set()
        for event in self.events:
            if event.kind in self.BACKWARD_KINDS:
                out.update(event.ctx.loops)
        for site in self.calls:
            if site.ctx.loops and self.calls_into(site, self.backward_functions):
                out.update(site.ctx.loops)
        return out

    def iteration_loop(self, ctx: Context) -> Loop | None:
        """The innermost loop around ``ctx`` that runs a backward: one pass of it is one training
        iteration (a ``for opt in optimizers`` loop inside it is not)."""
        for loop in reversed(ctx.loops):
            if loop in self.backward_loops:
                return loop
        return None

    def backward_scaler(self, event: Event) -> str | None:
        """The scaler whose scale a backward runs on: ``scaler.scale(loss).backward()``,
        ``(scaler.scale(loss) / n).backward()`` or ``scaled = scaler.scale(loss); scaled.backward()``."""
        if event.kind == "scale_backward":
            return event.scaler
        if event.kind not in ("backward", "autograd_backward"):
            return None
        target = event.call.func.value if event.kind == "backward" and isinstance(event.call.func, cst.Attribute) else event.call
        for other in self.events_by_scope.get(event.ctx.scope, []):
            if other.kind == "scale" and self.contains(target, other.call):
                return other.scaler
        if event.kind == "backward" and event.receiver is not None:
            for assignment in self.assignments_to(event.receiver, event.ctx.scope):
                if assignment.ctx.order >= event.order or assignment.value is None:
                    continue
                for other in self.events_by_scope.get(assignment.ctx.scope, []):
                    if other.kind == "scale" and self.contains(assignment.value, other.call):
                        return other.scaler
        return None

    def statement_in_block(self, node: cst.CSTNode, block: cst.CSTNode) -> cst.CSTNode | None:
        """The statement of ``block`` that holds ``node`` (a statement), if any."""
        current: cst.CSTNode | None = node
        seen = 0
        while current is not None and seen < 200:
            parent = self.parents.get(current)
            if parent is block:
                return current
            current = parent
            seen += 1
        return None

    # -- nodes inside nodes (by source range)
    def within(self, inner: cst.CSTNode, outer: cst.CSTNode) -> bool:
        """``inner`` lies inside ``outer`` (or is it)."""
        return self.contains(outer, inner)

    def calls_within(self, node: cst.CSTNode) -> list[CallSite]:
        """Call sites inside ``node`` (itself excluded), in source order."""
        return [s for s in self.calls if s.node is not node and self.within(s.node, node)]

    def references_within(self, node: cst.CSTNode) -> list[Reference]:
        """Dotted-name references inside ``node``."""
        return [r for r in self.references if self.within(r.node, node)]

    @cached_property
    def with_contexts(self) -> dict[cst.With, Context]:
        """Where each ``with`` statement sits (its scope, loops, branches)."""
        return {node: ctx for node, ctx in self._c.withs}

    # -- gradient-free code: ``with torch.no_grad():``, ``@torch.inference_mode()``
    def _grad_disabling(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        target = expr.func if isinstance(expr, cst.Call) else expr
        qualname = self.qualname(target, scope)
        if qualname in N.GRAD_DISABLING:
            return True
        if isinstance(expr, cst.Call) and qualname in ("torch.set_grad_enabled", "torch.autograd.set_grad_enabled"):
            return N.bool_value(N.argument(expr, 0, "mode")) is False
        return False

    @cached_property
    def grad_disabled_nodes(self) -> set[cst.CSTNode]:
        """``with`` blocks and decorated functions that run without autograd (no_grad/inference_mode)."""
        out: set[cst.CSTNode] = set()
        for node, ctx in self._c.withs:
            if any(self._grad_disabling(item.item, ctx.scope) for item in node.items):
                out.add(node)
        for function in self.functions:
            if any(self._grad_disabling(d.decorator, function.ctx.scope) for d in function.node.decorators):
                out.add(function.node)
        return out

    def in_no_grad(self, ctx: Context) -> bool:
        """The code at ``ctx`` runs under ``no_grad``/``inference_mode`` (lexically, incl. decorators)."""
        if any(w in self.grad_disabled_nodes for w in ctx.withs):
            return True
        scope: Scope | None = ctx.scope
        while scope is not None:
            if scope.kind == "function" and scope.node in self.grad_disabled_nodes:
                return True
            scope = scope.parent
        return False

    # -- optimizers and the modules they train
    def is_optimizer_construction(self, site: CallSite) -> bool:
        """``torch.optim.X(...)``, a known optimizer class, or an optimizer factory call."""
        qualname = site.qualname or ""
        last = (site.func_text or "").rsplit(".", 1)[-1]
        return bool(
            (qualname.startswith("torch.optim.") and ".lr_scheduler" not in qualname and ".swa_utils" not in qualname)
            or (last in _OPTIMIZER_CLASSES and (qualname == "" or "sched" not in qualname))
            or _OPTIMIZER_FACTORY.search(last)
        )

    @cached_property
    def optimizer_constructions(self) -> list[CallSite]:
        return [site for site in self.calls if self.is_optimizer_construction(site)]

    @cached_property
    def optimized_modules(self) -> list[tuple[str, CallSite]]:
        """(module key, optimizer construction) for modules whose parameters an optimizer receives.

        ``SGD(model.parameters())``, param groups (``[{"params": m.parameters()}]``), a name bound
        first (``params = filter(..., model.parameters()); AdamW(params)``), and factories given the
        module itself (``create_optimizer_v2(model, ...)``, ``build_optimizer(cfg, model)``).
        """
        out: list[tuple[str, CallSite]] = []
        for site in self.optimizer_constructions:
            nodes: list[cst.CSTNode] = [site.node]
            for arg in site.node.args:
                if isinstance(arg.value, cst.Name):
                    for assignment in self.assignments_to(arg.value.value, site.ctx.scope):
                        if assignment.value is not None and assignment.ctx.order < site.ctx.order:
                            nodes.append(assignment.value)
            for node in nodes:
                for inner in self.calls_within(node):
                    func = inner.node.func
                    if isinstance(func, cst.Attribute) and func.attr.value in ("parameters", "named_parameters"):
                        key = N.dotted(func.value)
                        if key is not None:
                            out.append((key, site))
            last = (site.func_text or "").rsplit(".", 1)[-1]
            if _OPTIMIZER_FACTORY.search(last):
                for arg in site.node.args:
                    if arg.star:
                        continue
                    key = N.dotted(arg.value)
                    if key is not None and (arg.keyword is None or arg.keyword.value in ("model", "module", "net")):
                        out.append((key, site))
        return out

    def module_calls(self, key: str) -> list[CallSite]:
        """Calls that run a module: ``model(x)`` / ``model.forward(x)``."""
        return [s for s in self.calls if s.func_text in (key, f"{key}.forward")]

    @cached_property
    def frozen_modules(self) -> set[str]:
        """Module keys frozen in this file: ``m.requires_grad_(False)``, ``for p in m.parameters():
        p.requires_grad = False``, or ``m.eval()`` with no ``m.train()`` anywhere."""
        out: set[str] = set()
        trained: set[str] = set()
        evaluated: set[str] = set()
        for site in self.calls:
            func = site.node.func
            if not isinstance(func, cst.Attribute):
                continue
            key = N.dotted(func.value)
            if key is None:
                continue
            method = func.attr.value
            if method == "requires_grad_":
                value = N.argument(site.node, 0, "requires_grad")
                if N.bool_value(value) is False:
                    out.add(key)
            elif method == "eval":
                evaluated.add(key)
            elif method == "train":
                trained.add(key)
        out |= evaluated - trained
        for loop in self.loops:
            if not isinstance(loop.node, cst.For) or not isinstance(loop.node.iter, cst.Call):
                continue
            func = loop.node.iter.func
            if not (isinstance(func, cst.Attribute) and func.attr.value == "parameters"):
                continue
            key = N.dotted(func.value)
            names = loop.target_names
            for assignment in self.assignments:
                if loop in assignment.ctx.loops and N.bool_value(assignment.value) is False:
                    if any(t.endswith(".requires_grad") and t.split(".")[0] in names for t in assignment.targets):
                        if key is not None:
                            out.add(key)
        return out
