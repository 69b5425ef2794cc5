"""Print the analysis core's structure figures, each against its target.

    python scripts/structure.py          # a table; exit 0 whatever it shows
    python scripts/structure.py --check  # exit 1 when a target is missed

Targets: no rule reads source-order numbers (``.order``) or the old syntactic path helpers
(``on_path``, ``exclusive``); no class of the analysis with more than three bases; no module
over 400 lines; no import circle inside ``src/amplint``; rule logic (scripts/rule_logic_lines.py)
median under 80 lines. Read from the source with ``ast``; nothing is imported or run.
"""

from __future__ import annotations

import ast
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "amplint"
ANALYSIS = ("semantic", "amp", "rules", "project")
MAX_BASES, MAX_LINES, MAX_MEDIAN = 3, 400, 80


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def order_reads_in_rules() -> list[str]:
    found = []
    for path in sorted((PACKAGE / "rules").glob("amp*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("order", "on_path", "exclusive"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: .{node.attr}")
    return found


def wide_classes(modules: dict[str, Path]) -> list[str]:
    found = []
    for name, path in modules.items():
        if name.split(".")[1:2] and name.split(".")[1] not in ANALYSIS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and len(node.bases) > MAX_BASES:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.name} has {len(node.bases)} bases")
    return found


def long_modules(modules: dict[str, Path]) -> list[str]:
    found = []
    for path in modules.values():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            found.append(f"{path.relative_to(ROOT)}: {lines} lines")
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Modules of the package that ``name`` imports, at module level or inside a function (a
    deferred import is still a dependency); ``if TYPE_CHECKING:`` blocks are left out.

    What a statement names is counted: ``from amplint.amp import catalogue`` names the package
    ``amplint.amp`` (whose ``__init__`` imports the submodules back) as well as the module, so
    modules of a package import their siblings as ``import amplint.amp.catalogue as API``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    checking = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
                for n in ast.walk(node)}
    for statement in ast.walk(tree):
        if id(statement) not in checking:
            if isinstance(statement, ast.Import):
                out.update(alias.name for alias in statement.names if alias.name in modules)
            elif isinstance(statement, ast.ImportFrom):
                base = statement.module or ""
                if statement.level:
                    anchor = package.split(".")[: len(package.split(".")) - statement.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                # ``from pkg import module`` depends on pkg (its ``__init__`` runs, and the name
                # is looked up there first) and on the module; ``import pkg.module`` names the module.
                if base in modules:
                    out.add(base)
                for alias in statement.names:
                    if f"{base}.{alias.name}" in modules:
                        out.add(f"{base}.{alias.name}")
    out.discard(name)
    return out


def import_circles(modules: dict[str, Path]) -> list[list[str]]:
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    # Tarjan's strongly connected components: each component of more than one module is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in graph:
        if node not in index:
            visit(node)
    return sorted(circles)


def rule_logic_median() -> float:
    output = subprocess.run([sys.executable, str(ROOT / "scripts" / "rule_logic_lines.py")], capture_output=True,
                            text=True, check=True).stdout
    counts = [int(line.split()[1]) for line in output.splitlines() if line.startswith("AMP")]
    return statistics.median(counts)


def main(argv: list[str]) -> int:
    modules = _modules()
    rows = [
        ("rule lines reading .order / on_path / exclusive", order_reads_in_rules(), 0),
        (f"analysis classes with more than {MAX_BASES} bases", wide_classes(modules), 0),
        (f"modules over {MAX_LINES} lines", long_modules(modules), 0),
        ("import circles in src/amplint", [" -> ".join(c) for c in import_circles(modules)], 0),
    ]
    missed = False
    for title, items, target in rows:
        status = "ok" if len(items) <= target else "MISSED"
        missed |= status != "ok"
        print(f"{status:6} {title}: {len(items)} (target {target})")
        for item in items:
            print(f"         {item}")
    median = rule_logic_median()
    status = "ok" if median < MAX_MEDIAN else "MISSED"
    missed |= status != "ok"
    print(f"{status:6} rule logic median: {median:g} lines (target < {MAX_MEDIAN})")
    return 1 if missed and "--check" in argv else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
