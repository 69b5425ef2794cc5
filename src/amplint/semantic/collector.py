"""The one walk over a module: what it records, and where each node sits.

Every rule's facts come from the lists this collector fills in a single pass: scopes with their
bindings, imports, assignments, calls, dotted references, functions, loops, ``with`` blocks,
branches, returns and yields, each with its :class:`Context` (scope, loops, ``with`` blocks,
branches, statement and order).
"""

from __future__ import annotations

import libcst as cst

import amplint.semantic.syntax as S
from amplint.semantic.records import (
    Assignment, Binding, BindingKind, Branch, CallSite, Context, FunctionInfo, ImportRecord, Loop, Reference, Scope,
)
from amplint.semantic.import_records import imported_names
from amplint.semantic.syntax import bound_names, target_text
from amplint.semantic.walk import Walker


class Collector(Walker):
    """Records scopes, bindings, imports, assignments, calls, references, loops, branches, ``with`` blocks."""

    def __init__(self) -> None:
        super().__init__()
        self.module_scope: Scope | None = None
        self.scopes: list[Scope] = []
        self.scope_stack: list[Scope] = []
        self.loop_stack: list[Loop | None] = []  # None marks a function boundary
        self.with_stack: list[cst.With | None] = []
        self.branch_stack: list[Branch | None] = []
        self.stmt_stack: list[cst.CSTNode] = []
        self.suite_stack: list[cst.SimpleStatementSuite] = []  # ``if x: a()``: the ``a()`` part
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
        self.returns: list[tuple[cst.BaseExpression, Context]] = []
        self.if_statements: list[tuple[cst.If, Context]] = []
        self.conditional_expressions: list[cst.IfExp] = []
        self.annotations: list[cst.BaseExpression] = []  # parameter, return and variable annotations
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
            suite=self.suite_stack[-1] if self.suite_stack else None,
        )

    @property
    def scope(self) -> Scope:
        return self.scope_stack[-1]

    def _push_scope(self, kind: str, node: cst.CSTNode, name: str) -> Scope:
        scope = Scope(kind, node, self.scope_stack[-1] if self.scope_stack else None, name)
        self.scopes.append(scope)
        self.scope_stack.append(scope)
        return scope

    def visit_Module(self, node: cst.Module) -> None:
        self.module_scope = self._push_scope("module", node, "<module>")
        for child in node.body:
            self.parents[child] = node

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.stmt_stack.append(node)

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine) -> None:
        self.stmt_stack.pop()

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self.suite_stack.append(node)

    def leave_SimpleStatementSuite(self, original_node: cst.SimpleStatementSuite) -> None:
        self.suite_stack.pop()

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
        self.scope.bind(node.name.value, BindingKind.DEF, node)
        for decorator in node.decorators:
            self._decorator_depth += 1
            self._reference_parent.append((decorator, "decorator"))
            self.walk(decorator)
            self._reference_parent.pop()
            self._decorator_depth -= 1
        class_scope = self.scope if self.scope.kind == "class" else None
        all_params = (
            list(node.params.posonly_params)
            + list(node.params.params)
            + list(node.params.kwonly_params)
            + [p for p in (node.params.star_arg, node.params.star_kwarg) if isinstance(p, cst.Param)]
        )
        # Annotations are evaluated where the function is defined, like its decorators.
        for annotation in [p.annotation for p in all_params] + [node.returns]:
            if annotation is not None:
                self.annotations.append(annotation.annotation)
                self.walk(annotation.annotation)
        scope = self._push_scope("function", node, node.name.value)
        params = []
        for param in all_params:
            params.append(param.name.value)
            scope.bind(param.name.value, BindingKind.PARAMETER, param)
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

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._enter_compound(node)
        self.scope.bind(node.name.value, BindingKind.CLASS, node)
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
        return self._record_import(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return self._record_import(node)

    def _record_import(self, node: cst.Import | cst.ImportFrom) -> bool:
        aliases = []
        for alias, bound, target, binding_target in imported_names(node):
            self.scope.bind(bound, BindingKind.IMPORT, alias, binding_target)
            aliases.append((alias, bound, target))
        self.imports.append(ImportRecord(node, self.stmt_stack[-1] if self.stmt_stack else None, self.scope, tuple(aliases), self.context()))
        return False

    def visit_Global(self, node: cst.Global) -> None:
        self.scope.declared_global.update(item.name.value for item in node.names)

    # -- assignments
    def _bind_target(self, target: cst.CSTNode, kind: BindingKind, node: cst.CSTNode,
                     value: cst.BaseExpression | None = None) -> None:
        if isinstance(target, cst.Name):
            self.scope.bind(target.value, kind, node, value=value)
            return
        for name in bound_names(target):
            self.scope.bind(name, kind, node)
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
            owner = self.scope.class_scope
            if owner is not None:
                attribute = Binding(target.attr.value, BindingKind.ATTRIBUTE, owner, node, value=value)
                owner.attributes.setdefault(target.attr.value, []).append(attribute)

    def _record_assignment(self, node: cst.CSTNode, targets: list[cst.CSTNode], value: cst.BaseExpression | None) -> None:
        texts: list[str] = []
        keys: list[tuple[str, str | None]] = []
        for target in targets:
            self._bind_target(target, BindingKind.ASSIGNMENT, node, value)
            text = target_text(target)
            if text is not None:
                texts.append(text)
            if isinstance(target, cst.Subscript) and len(target.slice) == 1:
                base = S.dotted(target.value)
                element = target.slice[0].slice
                key = S.string_value(element.value) if isinstance(element, cst.Index) else None
                if base:
                    keys.append((base, key))
            if isinstance(target, (cst.Tuple, cst.List)):
                for element in target.elements:
                    text = target_text(element.value)
                    if text is not None:
                        texts.append(text)
        self.assignments.append(Assignment(tuple(texts), value, node, self.context(), tuple(keys)))

    def visit_Assign(self, node: cst.Assign) -> bool:
        self._record_assignment(node, [t.target for t in node.targets], node.value)
        self._walk_assignment(node.value, [t.target for t in node.targets])
        return False

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        self._record_assignment(node, [node.target], node.value)
        self.annotations.append(node.annotation.annotation)
        self.walk(node.annotation.annotation)
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
        self._bind_target(node.target, BindingKind.LOOP_TARGET, node)
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
        self._bind_target(node.target, BindingKind.COMPREHENSION, node)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._bind_target(node.name.name, BindingKind.EXCEPT, node)

    # -- calls and references
    def visit_Call(self, node: cst.Call) -> bool:
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
            func_text=S.dotted(node.func),
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
        parts = S.dotted_parts(node)
        if parts is not None:
            self._record_reference(node, parts)
            return False
        self._reference_parent.append((node, "other"))
        self.walk(node.value)
        self._reference_parent.pop()
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self._record_reference(node, [node.value])

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
