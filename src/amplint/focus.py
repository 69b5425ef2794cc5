"""Blank out top-level statements that cannot matter before the expensive libcst parse.

libcst parses about 25 times slower than the standard library's ``ast``. A large
file that survives the prefilter usually mentions AMP in one class or function
out of dozens (a rotary embedding that disables autocast in a 3,000-line model
file). ``ast`` finds the top-level statements cheaply; those that contain no
token any rule or fact needs are replaced by empty lines, so libcst parses a much
smaller text whose line and column numbers are those of the real file.

Only whole function and class definitions are blanked: module-level statements
(imports, ``device = torch.device(...)``, a module-level training loop) are
always kept, and so is any definition with a training-step token, because facts
connect a loop in one function to the backward or step in another.
"""

from __future__ import annotations

import ast
import re
import warnings

# Tokens of training-step events and of the facts that link functions together.
# A definition without any of them records nothing in its summary either (every one of
# :data:`amplint.project.phase.SUMMARY_TOKENS` is here; a test ties them together).
EVENT_TOKENS = (
    "backward", ".step(", "zero_grad", "torch.save", "load_state_dict", "state_dict", "clip_grad",
    "autocast", "scaler", "Scaler", "optim", "half()", "bfloat16", "float16", "__main__",
    "unscale_", ".scale(", "get_scale", "torch.half", "save(", ".half(",
)


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")


def span_of(statement: ast.stmt) -> range:
    """The lines of a statement, its decorators included."""
    start = statement.lineno
    decorators = getattr(statement, "decorator_list", None)
    if decorators:
        start = min(start, min(d.lineno for d in decorators))
    return range(start, (statement.end_lineno or statement.lineno) + 1)


def _relevance(lines: list[str], tokens: tuple[str, ...]):
    """Whether the lines of a span (``range`` of line numbers) hold an import or a token: a
    definition that holds neither is blanked."""
    from amplint.selection import any_case

    # Words the facts read in any case (``GRAD_SCALER.step``) keep a definition in any case.
    exact = tuple(t for t in dict.fromkeys(tokens + EVENT_TOKENS) if not any_case(t))
    words = tuple({t.lower() for t in tokens + EVENT_TOKENS if any_case(t)})

    def relevant(span: range) -> bool:
        chunk = "".join(lines[span.start - 1: span.stop - 1])
        if "import " in chunk or any(token in chunk for token in exact):
            return True
        lowered = chunk.lower()
        return any(word in lowered for word in words)

    return relevant


def blanked_whole(text: str, tokens: tuple[str, ...], tree: ast.Module, names: set[str]) -> bool:
    """Every top-level definition named in ``names`` is one :func:`focus_source` blanks whole
    (it holds neither an import nor a token): what the facts read of it is its signature alone."""
    relevant = _relevance(physical_lines(text), tokens)
    return not any(relevant(span_of(statement)) for statement in tree.body
                   if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and statement.name in names)


def physical_lines(text: str) -> list[str]:
    """Lines as Python numbers them, with their endings: only ``\n``, ``\r\n`` and ``\r`` end a
    line (``str.splitlines`` also splits at form feeds, ``\x1c`` and U+2028, which shifts every
    later line against ``ast``'s numbers)."""
    lines = _LINE.findall(text)
    return lines[:-1] if lines and lines[-1] == "" else lines


def focus_source(text: str, tokens: tuple[str, ...], tree: ast.Module | None = None,
                 definitions: set[str] | None = None) -> str | None:
    """The text with irrelevant top-level statements blanked, or ``None`` to parse it whole.

    ``tree`` is the text's ``ast``, when the caller has it already. ``definitions``: the names of
    the top-level definitions to keep (:func:`definitions_reached`); every other one is blanked,
    whatever it holds.
    """
    if tree is None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # invalid escape sequences etc. are not our concern
                tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None  # libcst will report the syntax error with its own position
    lines = physical_lines(text)
    relevant = _relevance(lines, tokens)
    keep: set[int] = set()
    drop: set[int] = set()
    passes: set[int] = set()  # first lines of blanked methods, which become ``pass``

    for statement in tree.body:
        span = span_of(statement)
        if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            # Module-level statements are short and feed facts (``device = torch.device(...)``,
            # ``criterion = nn.BCELoss()``): always parse them; only whole definitions are blanked.
            keep.update(span)
        elif (definitions is not None and statement.name not in definitions) or not relevant(span):
            drop.update(span)
        elif isinstance(statement, ast.ClassDef):
            # In a kept class, methods without any token are blanked to a ``pass``
            # on their first line, so the class body stays valid and lines stay put.
            keep.update(range(span.start, span_of(statement.body[0]).start))
            for member in statement.body:
                member_span = span_of(member)
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and not relevant(member_span):
                    drop.update(member_span)
                    passes.add(member_span.start)
                else:
                    keep.update(member_span)
        else:
            keep.update(span)
    drop -= keep
    if not drop:
        return None
    newline = "\r\n" if text.count("\r\n") * 2 > text.count("\n") else "\n"
    out = []
    for number, line in enumerate(lines, start=1):
        if number in passes and number in drop:
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}pass{newline}")
        elif number in drop:
            out.append(newline)
        else:
            out.append(line)
    return "".join(out)


def definitions_reached(tree: ast.Module, text: str, names: set[str]) -> set[str]:
    """``names`` and every top-level definition of ``tree`` (parsed from ``text``) their
    definitions may reach: the ones whose name any of them uses (a helper called, a base class, a
    decorator), and the ones that assign a global any of them uses (``global CTX``), again for
    those, to the end.

    What a function does as the facts read it depends only on its own definition, on the
    module-level statements and on these; the other definitions of the module can be blanked."""
    by_name: dict[str, list[ast.stmt]] = {}
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            by_name.setdefault(statement.name, []).append(statement)
    assigning = _assigning_globals(by_name) if "global" in text else {}
    reached: set[str] = set()
    waiting = [name for name in names if name in by_name]
    while waiting:
        name = waiting.pop()
        if name in reached:
            continue
        reached.add(name)
        used = {node.id for statement in by_name[name] for node in ast.walk(statement) if type(node) is ast.Name}
        waiting.extend(other for other in used if other in by_name and other not in reached)
        waiting.extend(other for other, assigned in assigning.items() if other not in reached and used & assigned)
    return reached | set(names)


def _assigning_globals(by_name: dict[str, list[ast.stmt]]) -> dict[str, set[str]]:
    """The globals each top-level definition declares (``global CTX``), by the definition's name."""
    out: dict[str, set[str]] = {}
    for name, statements in by_name.items():
        for statement in statements:
            for node in ast.walk(statement):
                if type(node) is ast.Global:
                    out.setdefault(name, set()).update(node.names)
    return out
