"""The semantic model of a module, independent of any library: records, bindings, flow, calls."""

from amplint.semantic.records import (
    Assignment, Binding, BindingKind, Branch, CallSite, Context, FunctionInfo, ImportRecord, Loop, Reference, Scope,
)

__all__ = [
    "Assignment", "Binding", "BindingKind", "Branch", "CallSite", "Context", "FunctionInfo", "ImportRecord", "Loop",
    "Reference", "Scope",
]
