"""Rule metadata read from the rule sources equals what the rule classes declare."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from amplint.model import FixSafety, Severity
from amplint.rules import all_rules
from amplint.rules.catalog import PACKAGE, PACKAGE_DIR, rule_catalog, rule_module_names
from amplint.rules.source_metadata import FIELDS, Unreadable, read_rules


def _read_shipped() -> dict:
    infos = {}
    for name in rule_module_names():
        source = (Path(PACKAGE_DIR) / f"{name}.py").read_text(encoding="utf-8")
        for info in read_rules(source, f"{PACKAGE}.{name}"):
            infos[info.code] = info
    return infos


def test_every_shipped_rule_is_read_from_source_as_its_class_declares():
    classes = all_rules()
    infos = _read_shipped()
    assert sorted(infos) == sorted(classes)
    for code, rule in classes.items():
        info = infos[code]
        for field in FIELDS:
            assert getattr(info, field) == getattr(rule, field), (code, field)
            assert type(getattr(info, field)) is type(getattr(rule, field)), (code, field)
        assert info.module == rule.__module__
        assert info.documentation() == rule.documentation()
        assert info.url() == rule.url()


def test_catalog_needs_no_rule_module_and_no_libcst():
    code = (
        "import sys\n"
        "from amplint.rules.catalog import rule_catalog\n"
        "catalog = rule_catalog()\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('libcst', 'amplint.rules.amp', 'amplint.amp', 'amplint.semantic', 'amplint.fix')))\n"
        "print(len(catalog), loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"{len(all_rules())} []"


def test_registered_classes_are_in_the_catalog(fake_rules):
    catalog = rule_catalog()
    assert catalog["AMP991"] is fake_rules["AMP991"]
    assert list(catalog) == sorted(catalog)


def _rule_source(body: str, before: str = "") -> str:
    return textwrap.dedent(before) + "class Toy(Rule):\n" + textwrap.indent(textwrap.dedent(body), "    ")


def test_reads_literals_base_constants_and_enums():
    source = _rule_source(
        '''
        """
        ## What it does
        Example with a line that looks like metadata:

            code = "NOT-THIS"
        """

        code = "AMP990"
        name = "toy"
        summary = "A toy"
        severity = Severity.WARNING
        fix_safety = FixSafety.SOMETIMES
        default_enabled = False
        triggers = SCALER_TRIGGERS + ("toy(",)
        focus_tokens: tuple = ("toy",)

        valid = ("x = 1\\n",)
        '''
    )
    (info,) = read_rules(source, "toy")
    assert (info.code, info.name, info.summary) == ("AMP990", "toy", "A toy")
    assert info.severity is Severity.WARNING and info.fix_safety is FixSafety.SOMETIMES
    assert info.default_enabled is False
    assert info.triggers == ("scaler", "Scaler", "unscale_", ".scale(", "toy(")
    assert info.focus_tokens == ("toy",)
    assert 'code = "NOT-THIS"' in info.documentation()


def test_metadata_after_a_method_is_still_read():
    source = _rule_source(
        '''
        code = "AMP990"
        name = "toy"
        summary = "A toy"

        def check(self):
            yield from ()

        triggers = ("late",)
        '''
    )
    (info,) = read_rules(source, "toy")
    assert info.triggers == ("late",)


def test_two_rule_classes_in_one_module():
    first = _rule_source('code = "AMP990"\nname = "a"\nsummary = "A"\n')
    second = _rule_source('code = "AMP989"\nname = "b"\nsummary = "B"\ntriggers = ("b",)\n')
    infos = read_rules(first + "\n\n" + second, "toy")
    assert [(i.code, i.triggers) for i in infos] == [("AMP990", ()), ("AMP989", ("b",))]


@pytest.mark.parametrize(
    "body",
    [
        'code = "AMP990"\nname = "toy"\nsummary = "A toy"\ntriggers = tuple("ab")\n',
        'code = "AMP990"\nname = "toy"\nsummary = "A toy"\ntriggers = _LOCAL_TRIGGERS\n',
        'code = "AMP990"\nname = "toy"\nsummary = "A toy"\nseverity = Severity.LOUD\n',
        'name = "toy"\nsummary = "A toy"\n',
    ],
    ids=["call", "module-constant", "unknown-enum-member", "no-code"],
)
def test_what_is_not_plain_is_unreadable(body):
    with pytest.raises(Unreadable):
        read_rules(_rule_source(body), "toy")


def test_a_rule_with_another_base_is_not_read():
    with pytest.raises(Unreadable):
        read_rules('class Toy(OtherRule):\n    code = "AMP990"\n', "toy")


# --------------------------------------------------------------------------- the table of a read


@pytest.fixture
def catalog_table(tmp_path, monkeypatch):
    """The catalog's table at a path of the test's own, written whenever a read makes one."""
    from amplint import bytecode_tables
    from amplint.rules import catalog

    path = tmp_path / "rule-catalog.marshal"
    monkeypatch.setattr(bytecode_tables, "table_path", lambda name: path if name == "rule-catalog" else None)
    monkeypatch.setattr(bytecode_tables, "may_write", lambda: True)
    catalog._read_package.cache_clear()
    yield path
    catalog._read_package.cache_clear()


def _fresh_read():
    from amplint.rules import catalog

    catalog._read_package.cache_clear()
    return catalog._read_package()


def test_a_read_writes_a_table_that_the_next_read_returns_unchanged(catalog_table, monkeypatch):
    from amplint.rules import source_metadata

    from_sources = _fresh_read()
    assert catalog_table.exists()
    assert from_sources == _read_shipped()

    def no_parse(*args):
        raise AssertionError("read from source although the table matches")

    monkeypatch.setattr(source_metadata, "read_rules", no_parse)
    from_table = _fresh_read()
    assert from_table == from_sources
    for code, info in from_table.items():
        assert type(info.severity) is Severity and type(info.fix_safety) is FixSafety, code


def test_a_changed_source_is_read_again(catalog_table, monkeypatch):
    from amplint import bytecode_tables
    from amplint.rules import catalog

    _fresh_read()
    table = bytecode_tables.read_table(catalog_table)
    # A table of other sources (as after an edit of a rule module): its rows must not be used.
    (first, *rest), readers = table["key"]
    table["key"] = ((first[0], first[1] + 1, first[2]), *rest), readers
    table["rules"] = [(row[0], "stale-name", *row[2:]) for row in table["rules"]]
    bytecode_tables.write_table(catalog_table, table)
    infos = _fresh_read()
    assert "stale-name" not in {info.name for info in infos.values()}
    assert infos == _read_shipped()
    assert bytecode_tables.read_table(catalog_table)["key"] == catalog._sources_key(
        {name: (Path(PACKAGE_DIR) / f"{name}.py").read_bytes() for name in rule_module_names()})


@pytest.mark.parametrize("content", [b"", b"not a table", b"\x00" * 64], ids=["empty", "garbage", "zeros"])
def test_an_unreadable_table_costs_a_read_from_source(catalog_table, content):
    catalog_table.write_bytes(content)
    assert _fresh_read() == _read_shipped()


def test_no_table_is_written_where_python_writes_no_bytecode(catalog_table, monkeypatch):
    from amplint import bytecode_tables

    monkeypatch.setattr(bytecode_tables, "may_write", lambda: False)
    assert _fresh_read() == _read_shipped()
    assert not catalog_table.exists()


def test_a_clean_run_with_the_table_parses_no_rule_source(tmp_path):
    # Two real runs of the command, bytecode writing allowed: the first leaves the table, the
    # second neither imports ast nor the source reader.
    import json
    import os

    (tmp_path / "plain.py").write_text("import os\n\nprint(os.getcwd())\n")
    probe = (
        "import json, sys\n"
        "from amplint.cli.main import main\n"
        "try:\n    main(['check', '--no-cache', 'plain.py'])\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(m for m in sys.modules if m in ('ast', 'amplint.rules.source_metadata'))))\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path / "pycache")  # this test's own bytecode and tables
    runs = [subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
            for _ in range(2)]
    first, second = (json.loads(run.stdout.splitlines()[-1]) for run in runs)
    assert "amplint.rules.source_metadata" in first
    assert second == []
