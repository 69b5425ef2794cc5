"""Version and capability gates: tests that ask which torch is installed (``hasattr(torch.amp,
"GradScaler")``, ``version.parse(torch.__version__) >= ...``, ``TORCH_2_4``), as opposed to tests
that ask which device or precision runs (``torch.cuda.is_available()``, ``args.device == "cpu"``,
``precision == "fp16"``). Only a gate makes the old API in one of its arms a compatibility
fallback; an arm of a device or precision dispatch runs on a current torch too.
"""

from __future__ import annotations

import re

import libcst as cst

import amplint.semantic.syntax as S
from amplint.semantic.records import Scope

# A name that says it holds or asks for a version: ``TORCH_VERSION``, ``is_torch_version``,
# ``version.parse``, ``digit_version``, ``LooseVersion``, ``_TORCH_GREATER_EQUAL_2_4``,
# ``TORCH_2_4``, ``IS_TORCH_GE_1_10``, ``torch2``, ``PT_GE_2``.
_VERSION_NAME = re.compile(
    r"version|torch_?(?:\d|ge\b|ge_|gt\b|gt_|geq|greater|newer|older|less|lt\b|lt_|le\b|le_|leq|at_?least|above|below)"
    r"|(?:^|_)pt_?(?:\d|ge_|gt_|lt_|le_)",
    re.IGNORECASE,
)
# Exceptions a missing or older API raises: a ``try`` of the new API caught by one of these (or
# by a catch-all) keeps the old one as a fallback. A ``RuntimeError`` handler (out of memory, a
# failed kernel) is not about the API.
_API_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError", "TypeError", "NameError",
                         "Exception", "BaseException"})
_MAX_DEPTH = 2


_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError"})


def _caught(facts: "FileFacts", handler: cst.ExceptHandler) -> set[str]:
    """The exception class names a handler names (their last parts)."""
    if handler.type is None:
        return set()
    names = {ref.parts[-1] for ref in facts.references_within(handler.type)}
    return names or {(S.dotted(handler.type) or "").rsplit(".", 1)[-1]}


def catches_api_errors(facts: "FileFacts", handler: cst.ExceptHandler) -> bool:
    """``except (ImportError, AttributeError)``, ``except TypeError``, ``except Exception`` or a bare
    ``except``: a handler that runs when the API tried in its ``try`` is missing."""
    return handler.type is None or bool(_caught(facts, handler) & _API_ERRORS)


def catches_failed_import(facts: "FileFacts", handler: cst.ExceptHandler) -> bool:
    """``except ImportError`` (or ``ModuleNotFoundError``, a catch-all, a bare ``except``): a
    handler that runs when the import tried in its ``try`` fails."""
    return handler.type is None or bool(_caught(facts, handler) & {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def is_version_gate(facts: "FileFacts", test: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
    """``test`` (anywhere in it) asks which torch this is: ``hasattr``/``getattr`` on ``torch`` or
    one of its modules, ``torch.__version__``, a name that says it is a version or a version
    comparison (``TORCH_2_4``, ``is_torch_version(...)``, ``version.parse(...)``), or a name this
    file assigns from such a test (``NEW_AMP = hasattr(torch.amp, "GradScaler")``) or sets in a
    ``try`` that imports (``try: from torch.amp import GradScaler; HAS_AMP = True``)."""
    for site in facts.calls_within(test) + ([facts.call_site(test)] if isinstance(test, cst.Call) else []):
        if site is None or not isinstance(site.node.func, cst.Name) or site.node.func.value not in ("hasattr", "getattr"):
            continue
        if site.node.args and _names_torch(facts, site.node.args[0].value, scope):
            return True
    for ref in facts.references_within(test):
        if any(_VERSION_NAME.search(part) for part in ref.parts):
            return True
        if depth < _MAX_DEPTH and len(ref.parts) == 1 and _assigned_a_gate(facts, ref.parts[0], scope, depth):
            return True
    return False


def _names_torch(facts: "FileFacts", node: cst.BaseExpression, scope: Scope) -> bool:
    qualname = facts.bindings.qualname(node, scope)
    return qualname is not None and (qualname == "torch" or qualname.startswith("torch."))


def _assigned_a_gate(facts: "FileFacts", name: str, scope: Scope, depth: int) -> bool:
    for assignment in facts.assignments_to(name, scope):
        if assignment.value is not None and is_version_gate(facts, assignment.value, assignment.ctx.scope, depth + 1):
            return True
        for branch in assignment.ctx.branches:
            if isinstance(branch.node, cst.Try) and branch.part in ("body", "handler") and any(
                _caught(facts, handler) & _IMPORT_ERRORS for handler in branch.node.handlers
            ):
                return True
    return False
