"""Rule metadata read from the rule sources equals what the rule classes declare."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from amplint.model import FixSafety, Severity
from amplint.rules import all_rules
from amplint.rules.catalog import FIELDS, PACKAGE, PACKAGE_DIR, Unreadable, read_rules, rule_catalog, rule_module_names


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
