"""Reused dataclass code: the same classes as compiling from source, and a table that can only cost speed."""

from __future__ import annotations

import dataclasses
import marshal
import subprocess
import sys
import textwrap
from importlib.util import MAGIC_NUMBER
from pathlib import Path

import pytest

from amplint.dataclass_code import reused_dataclass_code, table_path

# Run in a fresh interpreter: defines frozen, ordered and slotted dataclasses inside the block
# and prints what their generated methods do and how many sources were compiled.
PROBE = textwrap.dedent('''
    import builtins, dataclasses, json, sys
    sys.dont_write_bytecode = sys.argv[2] == "no-write"
    from pathlib import Path
    from amplint.dataclass_code import reused_dataclass_code

    compiled = []
    real_compile = builtins.compile
    def counting_compile(source, *args, **kwargs):
        if isinstance(source, str) and source.startswith("def __create_fn__"):
            compiled.append(source)
        return real_compile(source, *args, **kwargs)
    builtins.compile = counting_compile

    with reused_dataclass_code("probe", Path(sys.argv[1])):
        @dataclasses.dataclass(frozen=True, order=True)
        class Point:
            x: int
            y: int = 2
            tags: tuple = dataclasses.field(default_factory=tuple)

        @dataclasses.dataclass
        class Box:
            item: Point
            count: int = 0

    builtins.compile = real_compile
    p, q = Point(1), Point(1, 3, ("a",))
    box = Box(p)
    box.count += 1
    try:
        p.x = 5
        frozen = False
    except dataclasses.FrozenInstanceError:
        frozen = True
    print(json.dumps({
        "compiled": len(compiled),
        "repr": [repr(p), repr(q), repr(box)],
        "eq": p == Point(1), "lt": p < q, "hash": hash(p) == hash(Point(1)), "frozen": frozen,
        "doc": Point.__doc__,
        "exec_restored": "exec" not in vars(dataclasses),
    }))
''')


def probe(table: Path, write: bool = True) -> dict:
    import json

    out = subprocess.run([sys.executable, "-c", PROBE, str(table), "write" if write else "no-write"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def test_a_second_run_compiles_nothing_and_builds_the_same_classes(tmp_path):
    table = tmp_path / "table.marshal"
    first = probe(table)
    assert first["compiled"] > 0 and table.exists()
    second = probe(table)
    assert second["compiled"] == 0
    assert {**second, "compiled": None} == {**first, "compiled": None}
    assert first["eq"] and first["lt"] and first["hash"] and first["frozen"] and first["exec_restored"]
    assert first["repr"][2] == "Box(item=Point(x=1, y=2, tags=()), count=1)"


def test_a_corrupt_or_foreign_table_is_ignored_and_replaced(tmp_path):
    table = tmp_path / "table.marshal"
    reference = probe(tmp_path / "reference.marshal")
    for content in (b"garbage", MAGIC_NUMBER + b"\x00\x01", b"\x00\x00\x00\x00" + marshal.dumps({})):
        table.write_bytes(content)
        result = probe(table)
        assert result["compiled"] > 0
        assert {**result, "compiled": None} == {**reference, "compiled": None}
        assert probe(table)["compiled"] == 0  # rewritten with the good entries


def test_nothing_is_written_where_python_writes_no_bytecode(tmp_path):
    table = tmp_path / "table.marshal"
    result = probe(table, write=False)
    assert result["compiled"] > 0 and not table.exists()


def test_an_unwritable_place_costs_only_speed(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = probe(blocker / "table.marshal")  # its folder is a file: cannot be created
    assert result["compiled"] > 0 and result["exec_restored"]


def test_the_block_nests_and_restores_dataclasses(tmp_path):
    with reused_dataclass_code("outer", tmp_path / "outer.marshal"):
        with reused_dataclass_code("inner", tmp_path / "inner.marshal"):
            @dataclasses.dataclass
            class Inner:
                value: int

        assert "exec" in vars(dataclasses)
    assert "exec" not in vars(dataclasses)
    assert Inner(3) == Inner(3)
    assert (tmp_path / "outer.marshal").exists() == (not sys.dont_write_bytecode)
    assert not (tmp_path / "inner.marshal").exists()


def test_an_exception_in_the_block_restores_dataclasses(tmp_path):
    with pytest.raises(RuntimeError):
        with reused_dataclass_code("probe", tmp_path / "t.marshal"):
            raise RuntimeError("boom")
    assert "exec" not in vars(dataclasses)


def test_the_table_lives_beside_amplints_bytecode_and_is_named_for_the_interpreter():
    path = table_path("parsing")
    assert path is not None
    assert path.parent.name == "__pycache__" or sys.pycache_prefix
    assert path.name == f"dataclass-code-parsing.{sys.implementation.cache_tag}.marshal"


_FRESH_INTERPRETER = """
import sys
import amplint.dataclass_code  # the first import of dataclasses in this process
import dataclasses

stand_in = type(dataclasses.inspect).__name__
before = "inspect" in sys.modules

@dataclasses.dataclass
class Point:
    x: int
    y: str = "a"

import inspect
print(stand_in, before, Point.__doc__, dataclasses.inspect is inspect, sys.modules["inspect"] is inspect)
"""


def test_dataclasses_imports_inspect_only_when_it_needs_it():
    out = subprocess.run([sys.executable, "-c", _FRESH_INTERPRETER], capture_output=True, text=True, check=True).stdout
    stand_in, before, *doc, same_in_dataclasses, same_in_sys_modules = out.split()
    # dataclasses started with the stand-in, and nothing had imported inspect yet...
    assert (stand_in, before) == ("_InspectOnFirstUse", "False")
    # ...a class without a docstring still gets the one dataclasses writes from its signature,
    # and from then on dataclasses and everyone else share the real module.
    assert " ".join(doc) == "Point(x: int, y: str = 'a')"
    assert (same_in_dataclasses, same_in_sys_modules) == ("True", "True")


def test_dataclasses_imported_before_amplint_is_left_alone():
    code = "import dataclasses, inspect\nimport amplint.dataclass_code\nprint(dataclasses.inspect is inspect)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True"]
