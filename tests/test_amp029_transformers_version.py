"""AMP029 reads the project's transformers version (``target-transformers`` or the project's
requirement) to decide which arguments are removed; the runtime truth is in
``test_amp029_transformers_runtime.py``."""

from __future__ import annotations

import json
import subprocess
import sys
from textwrap import dedent

import pytest

from amplint.api import fix_source, lint_source

SOURCE = dedent("""\
    from transformers import TrainingArguments


    def build(output_dir):
        return TrainingArguments(
            output_dir=output_dir,
            use_cpu=True,
            fp16_opt_level="O1",
            half_precision_backend="auto",
            fp16_backend="auto",
        )
    """)
ON_FIVE = {"select": ["AMP029"], "target-transformers": "5.0"}


def test_on_transformers_5_all_three_are_reported_and_removed():
    findings = lint_source(SOURCE, settings=ON_FIVE)
    assert [(f.code, f.location.row) for f in findings] == [("AMP029", 8), ("AMP029", 9), ("AMP029", 10)]
    assert all("removed in transformers 5" in f.message for f in findings)
    fixed = fix_source(SOURCE, settings=ON_FIVE)
    assert fixed == SOURCE.replace('        fp16_opt_level="O1",\n        half_precision_backend="auto",\n        fp16_backend="auto",\n', "")
    assert lint_source(fixed, settings=ON_FIVE) == []


def test_while_transformers_4_is_admitted_only_the_deprecated_one_is_reported():
    for settings in ({"select": ["AMP029"]}, {"select": ["AMP029"], "target-transformers": "4.40"}):
        assert [f.location.row for f in lint_source(SOURCE, settings=settings)] == [10]


def test_a_backend_other_than_the_default_is_not_fixed_on_5():
    source = "from transformers import TrainingArguments\nargs = TrainingArguments('o', half_precision_backend='apex', fp16_opt_level='O2')\n"
    findings = lint_source(source, settings=ON_FIVE)
    assert len(findings) == 2 and fix_source(source, settings=ON_FIVE) == source


@pytest.mark.parametrize(("requirement", "reported"), [("transformers>=5.1", [8, 9, 10]), ("transformers>=4.46,<6", [10])])
def test_the_bound_is_read_from_the_project(tmp_path, requirement, reported):
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "p"\nversion = "0"\ndependencies = ["{requirement}"]\n')
    (tmp_path / "train.py").write_text(SOURCE)
    out = subprocess.run(
        [sys.executable, "-m", "amplint", "check", "--select", "AMP029", "--output-format", "json", "--no-cache", "train.py"],
        cwd=tmp_path, capture_output=True, text=True,
    )
    assert out.returncode == 1, out.stderr
    assert [item["location"]["row"] for item in json.loads(out.stdout)] == reported
    settings = subprocess.run(
        [sys.executable, "-m", "amplint", "check", "--show-settings", "train.py"], cwd=tmp_path, capture_output=True, text=True,
    )
    assert f'target-transformers = "{requirement.split(">=")[1].split(",")[0]}"' in settings.stdout
