"""docs/reliability.md lists every module that writes, moves or removes files, and what guards it.

The list is only worth something while it is complete, so the source decides: every module of
``src/amplint`` with a call that writes (``open`` for writing, ``os.replace``, ``savefig``,
``Path.write_bytes``, ...) must have a row in the page's table, and every row must name such a
module. A new writer without a row, or a row left behind by a removed one, fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "amplint"
PAGE = ROOT / "docs" / "reliability.md"
SECTION = "## Every file amplint writes"

_OS_CALLS = {"replace", "rename", "renames", "open", "unlink", "remove", "rmdir", "removedirs", "makedirs", "mkdir",
             "utime", "truncate", "link", "symlink"}
_SHUTIL_CALLS = {"move", "copy", "copyfile", "copy2", "copytree", "rmtree"}
_TEMPFILE_CALLS = {"mkstemp", "mkdtemp", "TemporaryDirectory", "NamedTemporaryFile"}
_METHOD_CALLS = {"write_text", "write_bytes", "savefig", "touch", "mkdir", "unlink", "rmdir"}


def _writes_by_mode(call: ast.Call) -> bool:
    mode = call.args[1] if len(call.args) > 1 else None
    for keyword in call.keywords:
        if keyword.arg == "mode":
            mode = keyword.value
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and any(c in mode.value for c in "wax+")


def write_calls(tree: ast.AST) -> set[str]:
    """What a module calls that writes, moves or removes a file or folder."""
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name):
            if func.id == "open" and _writes_by_mode(node):
                found.add("open")
            continue
        if not isinstance(func, ast.Attribute):
            continue
        owner = func.value.id if isinstance(func.value, ast.Name) else None
        if owner == "os" and (func.attr in _OS_CALLS or func.attr == "fdopen" and _writes_by_mode(node)):
            found.add(f"os.{func.attr}")
        elif owner == "shutil" and func.attr in _SHUTIL_CALLS or owner == "tempfile" and func.attr in _TEMPFILE_CALLS:
            found.add(f"{owner}.{func.attr}")
        elif func.attr in _METHOD_CALLS or func.attr == "open" and _writes_by_mode(node):
            found.add(func.attr)
    return found


def writing_modules() -> dict[str, set[str]]:
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        calls = write_calls(ast.parse(path.read_text(encoding="utf-8")))
        if calls:
            modules[path.relative_to(PACKAGE).as_posix()] = calls
    return modules


def listed_modules() -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    assert SECTION in text, f"{PAGE.name} has no {SECTION!r} section"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return [re.match(r"\| `([^`]+)`", row).group(1) for row in rows]


def test_write_calls_are_recognised():
    sample = ast.parse(
        "open(p, 'wb'); open(p); open(p, mode='a'); os.replace(a, b); shutil.move(a, b);"
        "Path(p).write_text('x'); fig.savefig(p); tempfile.mkstemp(); text.replace('a', 'b'); os.fdopen(fd, 'r')"
    )
    assert write_calls(sample) == {"open", "os.replace", "shutil.move", "write_text", "savefig", "tempfile.mkstemp"}


def test_every_writing_module_has_a_row():
    listed = set(listed_modules())
    missing = {module: sorted(calls) for module, calls in writing_modules().items() if module not in listed}
    assert not missing, f"add these modules to {SECTION!r} in docs/reliability.md: {missing}"


def test_every_row_names_a_module_that_writes():
    listed = listed_modules()
    assert len(listed) == len(set(listed)), "a module has two rows"
    stale = [module for module in listed if module not in writing_modules()]
    assert not stale, f"rows for modules that no longer write (or do not exist): {stale}"
