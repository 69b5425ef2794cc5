"""Reading plain syntax: dotted names, literals, call arguments, assignment targets.

Nothing here knows about torch; every helper answers a question about one node.
"""

from __future__ import annotations

import re

import libcst as cst


def dotted_parts(node: cst.CSTNode) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; ``None`` for anything that is not a plain dotted name."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        parts.reverse()
        return parts
    return None


def dotted(node: cst.CSTNode | None) -> str | None:
    if node is None:
        return None
    parts = dotted_parts(node)
    return ".".join(parts) if parts is not None else None


def module_name(node: cst.BaseExpression | None) -> str:
    """The dotted text of an import's module (``torch.cuda.amp``)."""
    if node is None:
        return ""
    return dotted(node) or ""


def string_value(node: cst.CSTNode | None) -> str | None:
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:  # noqa: BLE001 - odd prefixes are simply not literal strings for us
            return None
        return value if isinstance(value, str) else None
    return None


def bool_value(node: cst.CSTNode | None) -> bool | None:
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    return None


def keyword_arg(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional_args(call: cst.Call) -> list[cst.Arg]:
    return [arg for arg in call.args if arg.keyword is None and not arg.star]


def has_star_args(call: cst.Call) -> bool:
    return any(arg.star for arg in call.args)


def argument(call: cst.Call, position: int | None, name: str) -> cst.BaseExpression | None:
    """The value bound to parameter ``name`` (at ``position`` when passed positionally)."""
    arg = keyword_arg(call, name)
    if arg is not None:
        return arg.value
    if position is not None:
        positionals = positional_args(call)
        if len(positionals) > position:
            return positionals[position].value
    return None


def dict_items(node: cst.CSTNode | None) -> list[tuple[str | None, cst.BaseExpression, cst.CSTNode]] | None:
    """``{"k": v}`` / ``dict(k=v)`` as ``[(key or None, value, element)]``; ``None`` if not a dict display.

    ``**spread`` entries are returned with key ``"**"`` (their content is unknown).
    """
    out: list[tuple[str | None, cst.BaseExpression, cst.CSTNode]] = []
    if isinstance(node, cst.Dict):
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                out.append((string_value(element.key), element.value, element))
            else:
                out.append(("**", element.value, element))
        return out
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "dict":
        for arg in node.args:
            if arg.keyword is not None:
                out.append((arg.keyword.value, arg.value, arg))
            else:
                out.append(("**", arg.value, arg))
        return out
    return None


def keyword_arg_value(call: cst.Call, name: str) -> cst.BaseExpression | None:
    arg = keyword_arg(call, name)
    return arg.value if arg is not None else None


def bound_names(target: cst.CSTNode) -> set[str]:
    """The plain names an assignment or loop target binds (``a, (b, *c)`` binds a, b and c)."""
    out: set[str] = set()
    if isinstance(target, cst.Name):
        out.add(target.value)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            out |= bound_names(element.value)
    elif isinstance(target, cst.StarredElement):
        out |= bound_names(target.value)
    return out


def target_text(target: cst.CSTNode) -> str | None:
    """An assignment target as dotted text; a subscript as ``base[...]``."""
    text = dotted(target)
    if text is not None:
        return text
    if isinstance(target, cst.Subscript):
        base = dotted(target.value)
        return f"{base}[...]" if base else None
    return None


def balanced(text: str) -> bool:
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


def flat_text(code: str) -> str:
    """Source text without whitespace or redundant outer parentheses, for comparing expressions."""
    text = re.sub(r"\s+", "", code)
    while text.startswith("(") and text.endswith(")") and balanced(text[1:-1]):
        text = text[1:-1]
    return text



def without_parens(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``expr`` without its own parentheses (as when it becomes a call argument)."""
    if getattr(expr, "lpar", None):
        return expr.with_changes(lpar=[], rpar=[])
    return expr


def leading_name(expr: cst.BaseExpression) -> str | None:
    """The name an arithmetic or method chain starts from: ``loss`` in ``(loss / n).mean()``."""
    node = without_parens(expr)
    while True:
        if isinstance(node, cst.BinaryOperation):
            node = without_parens(node.left)
        elif isinstance(node, cst.UnaryOperation):
            node = without_parens(node.expression)
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            node = without_parens(node.func.value)
        else:
            return node.value if isinstance(node, cst.Name) else None


def is_none(node: cst.CSTNode | None) -> bool:
    """``node`` is the literal ``None``."""
    return isinstance(node, cst.Name) and node.value == "None"


def may_be_none(value: cst.BaseExpression) -> bool:
    """``value`` may evaluate to the literal ``None``: itself, or an arm of ``a if c else b`` /
    ``a or b``."""
    if isinstance(value, cst.IfExp):
        return may_be_none(value.body) or may_be_none(value.orelse)
    if isinstance(value, cst.BooleanOperation):
        return may_be_none(value.left) or may_be_none(value.right)
    return is_none(value)


def parameter_default(function: cst.FunctionDef, name: str) -> cst.BaseExpression | None:
    """The default value of ``function``'s parameter ``name``, if it has one."""
    params = function.params
    for param in (*params.params, *params.kwonly_params, *params.posonly_params):
        if param.name.value == name and param.default is not None:
            return param.default
    return None


def callee_last_name(call: cst.Call) -> str | None:
    """The last name of the callee: ``add_scalar`` for ``writer.add_scalar(...)``, ``step`` for ``f().step()``."""
    text = dotted(call.func)
    if text is not None:
        return text.rsplit(".", 1)[-1]
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    return None


def if_chain_blocks(stmt: cst.If) -> list[cst.BaseSuite]:
    """The blocks of an ``if`` / ``elif`` / ``else`` chain, in order."""
    blocks = [stmt.body]
    orelse = stmt.orelse
    while orelse is not None:
        blocks.append(orelse.body)
        orelse = orelse.orelse if isinstance(orelse, cst.If) else None
    return blocks
