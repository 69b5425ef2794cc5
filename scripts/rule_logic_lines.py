"""Count the logic lines of each rule module: code that is neither docs, examples nor metadata.

A line counts when it holds code (not blank, not only a comment) inside a statement that is not
an import, a docstring, or one of the rule's metadata and example attributes. Usage::

    python scripts/rule_logic_lines.py [--markdown]
"""

from __future__ import annotations

import ast
import io
import statistics
import sys
import tokenize
from pathlib import Path

RULES = Path(__file__).resolve().parent.parent / "src" / "amplint" / "rules"
METADATA = {"code", "name", "summary", "severity", "fix_safety", "fix_withheld", "default_enabled", "triggers", "requires", "requires_match", "focus_tokens",
            "valid", "invalid"}


def _code_lines(source: str) -> set[int]:
    """Line numbers that hold a token other than a comment or a line break."""
    lines: set[int] = set()
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING,
            tokenize.ENDMARKER}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skip:
            lines.update(range(token.start[0], token.end[0] + 1))
    return lines


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _excluded(node: ast.stmt) -> bool:
    if isinstance(node, (ast.Import, ast.ImportFrom)) or _is_docstring(node):
        return True
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return any(isinstance(t, ast.Name) and t.id in METADATA for t in targets)


def logic_lines(path: Path) -> int:
    source = path.read_text(encoding="utf-8")
    code = _code_lines(source)
    counted: set[int] = set()

    def take(statements: list[ast.stmt]) -> None:
        for node in statements:
            if _excluded(node):
                continue
            if isinstance(node, ast.ClassDef):
                counted.update(range(node.lineno, node.body[0].lineno))  # the class header
                take(node.body)
                continue
            counted.update(range(node.lineno, node.end_lineno + 1))

    take(ast.parse(source).body)
    return len(counted & code)


def table() -> dict[str, int]:
    return {p.stem.split("_")[0].upper(): logic_lines(p) for p in sorted(RULES.glob("amp[0-9]*.py"))}


def main(argv: list[str]) -> int:
    counts = table()
    for code, count in counts.items():
        print(f"{code} {count}")
    print(f"median {statistics.median(counts.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
