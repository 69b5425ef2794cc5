"""What the rule gates read from single ``ast`` nodes and literals: callee names, disabled
autocast calls, device strings, precision literals, DeepSpeed config sections, torch imports.

Each helper restates, for Python's ``ast``, the test the facts (on libcst) make; the tests of
:mod:`amplint.rule_gates` tie each to the facts' own constants.
"""

from __future__ import annotations

import ast
import re

# ``amplint.amp.frameworks.LEGACY_PRECISIONS``' strings (a test keeps them equal).
LEGACY_PRECISION_STRINGS = ("16", "bf16")
# The last parts of the clip functions AMP019 judges (its ``_CLIPS``; a test keeps them equal).
TORCH_CLIP_NAMES = frozenset({"clip_grad_norm_", "clip_grad_norm", "clip_grad_value_"})


# The fields of a compound statement that hold statements (``handlers``: ``except`` clauses,
# ``cases``: a ``match`` statement's cases).
BODY_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def own_parts(node: ast.AST):
    """The nodes of a compound statement (or an ``except`` clause, a ``case``) but those of the
    statements it holds: decorators, arguments, a loop's target, a ``with`` statement's items."""
    for name in node._fields:
        if name in BODY_FIELDS:
            continue
        value = getattr(node, name, None)
        for part in value if isinstance(value, list) else (value,):
            if isinstance(part, ast.AST):
                yield from walk(part)


def walk(node: ast.AST):
    """Every node under ``node`` (itself included), each before its children: what ``ast.walk``
    gives in another order, at about half its cost (no generator per node's fields)."""
    stack = [node]
    pop, extend, append = stack.pop, stack.extend, stack.append
    while stack:
        node = pop()
        if not isinstance(node, ast.AST):
            continue  # a list field may hold names (``global a, b``)
        yield node
        for name in node._fields:
            value = getattr(node, name, None)
            if value.__class__ is list:
                extend(value)
            elif isinstance(value, ast.AST):
                append(value)


def callee_chain(func: ast.expr) -> list[ast.expr]:
    """``a.b.c`` as its Attribute and Name nodes, outermost first."""
    chain = []
    node = func
    while isinstance(node, ast.Attribute):
        chain.append(node)
        node = node.value
    if isinstance(node, ast.Name):
        chain.append(node)
    return chain


def last_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def built_disabled(call: ast.Call) -> bool:
    """A literal ``enabled=False`` keyword that the facts read as the call's ``enabled``
    (a keyword wins over any positional argument there), and no unpacked arguments."""
    if any(isinstance(arg, ast.Starred) for arg in call.args) or any(k.arg is None for k in call.keywords):
        return False
    return any(k.arg == "enabled" and isinstance(k.value, ast.Constant) and k.value.value is False for k in call.keywords)


def named_like_autocast(node: ast.expr) -> bool:
    """A name or attribute whose last part says ``autocast`` in any case (``self.amp_autocast``)."""
    last = last_name(node)
    return last is not None and "autocast" in last.lower()


# What the source of a string constant like ``"cuda:0"`` must show when it has no escape that can
# write a colon or a digit (``\x3a``, ``\072``, ``\u003a``, ``\N{...}``): its first colon right
# after a quote and an identifier (``"cuda:``) or after the quote of a string that another one
# precedes (``"cuda" ":0"``), then a digit, with only whitespace, whitespace escapes, quotes,
# string prefixes and comments between (``"cuda:" "0"``, ``"cuda:\t0"``). A slice (``x[0:1]``)
# or a dict entry (``"a": 1``) shows neither.
NUMERIC_ESCAPE = re.compile(r"\\[0-7xuUN]")
INDEXED_SOURCE = re.compile(
    r"""(?:["']\w+|["'](?:\s|#[^\n]*|\\\n)*[rRbBuUfF]*["']):(?:[\s"'rRbBuUfF]|\\[ntrfv\r\n]|#[^\n]*)*\d""")


def indexed_device_text(text: str) -> bool:
    """A string the facts could read as an indexed device (``"cuda:0"``): the test of
    ``amplint.amp.autocast.device_type_of`` on a string holding a colon."""
    kind, sep, index = text.partition(":")
    return bool(sep) and kind.isidentifier() and index.strip().isdigit()


def legacy_autocast_name(name: str) -> bool:
    return "autocast_gpu" in name or "autocast_cpu" in name


def legacy_precision_value(value: ast.expr) -> bool:
    """``16`` or ``"16"``/``"bf16"`` as the facts read a Lightning ``precision=`` (an f-string: may be)."""
    if isinstance(value, ast.JoinedStr):
        return True
    if not isinstance(value, ast.Constant):
        return False
    literal = value.value
    if isinstance(literal, str):
        return literal in LEGACY_PRECISION_STRINGS
    return type(literal) is int and literal == 16


def fp16_section(node: ast.Dict) -> bool:
    """``{"fp16": {"enabled": True}}``: the literal dicts ``framework_configs.deepspeed_precision`` reads."""
    for key, value in zip(node.keys, node.values):
        if isinstance(key, ast.Constant) and key.value == "fp16" and isinstance(value, ast.Dict):
            if any(isinstance(k, ast.Constant) and k.value == "enabled" and isinstance(v, ast.Constant) and v.value is True
                   for k, v in zip(value.keys, value.values)):
                return True
    return False


def imports_torch_amp(node: ast.Import | ast.ImportFrom) -> bool:
    """The import may bind ``torch.cuda.amp``/``torch.cpu.amp`` or a name from them: ``amp`` is a
    part of the imported module or an imported name, of torch (``torch_xla.amp`` is not torch's),
    or of a relative import (the package may be torch)."""
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] == "torch" and "amp" in alias.name.split(".") for alias in node.names)
    parts = (node.module or "").split(".")
    if node.level == 0 and parts[0] != "torch":
        return False
    return "amp" in parts or any(alias.name == "amp" for alias in node.names)


def indexed_constant(node: ast.AST) -> bool:
    if type(node) is not ast.Constant:
        return False
    value = node.value
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    return isinstance(value, str) and ":" in value and indexed_device_text(value)


def body_span(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[tuple[int, int], tuple[int, int]]:
    """Where the function's body starts and ends: its decorators and defaults are its caller's."""
    first = node.body[0]
    return (first.lineno, first.col_offset), (node.end_lineno or node.lineno, node.end_col_offset or 0)


def innermost(bodies: list[tuple[tuple[int, int], tuple[int, int]]], at: tuple[int, int]):
    """The innermost of ``bodies`` holding the position ``at`` (``None``: the module's)."""
    around = [body for body in bodies if body[0] <= at <= body[1]]
    return max(around) if around else None
