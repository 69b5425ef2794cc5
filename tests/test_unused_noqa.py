"""AMP100 (unused-noqa): which directives are reported, and the exact text its fix leaves."""

from __future__ import annotations

import pytest

from amplint.engine import lint_text
from amplint.settings import Settings

WITH_AMP100 = Settings(extend_select=("AMP100",))
DEPRECATED_LINE = "with torch.cuda.amp.autocast():"


def _fixed(text: str, settings: Settings = WITH_AMP100) -> str:
    result = lint_text(text, "train.py", settings, fix=True)
    return result.source if result.source is not None else text


def _reported(text: str, settings: Settings = WITH_AMP100) -> list[tuple[int, int, str]]:
    return [(f.location.row, f.location.column, f.message) for f in lint_text(text, "train.py", settings).findings]


# (before, after) of one line under `import torch`, fixed with AMP100 on.
SNAPSHOTS = [
    ("x = torch.ones(3)  # noqa: AMP003\n", "x = torch.ones(3)\n"),
    ("x = torch.ones(3)  # noqa: E501, AMP003\n", "x = torch.ones(3)  # noqa: E501\n"),
    ("x = torch.ones(3)  # noqa: AMP003, E501\n", "x = torch.ones(3)  # noqa: E501\n"),
    ("x = torch.ones(3)  #noqa:AMP003,E501\n", "x = torch.ones(3)  #noqa:E501\n"),
    ("x = torch.ones(3)  # type: ignore  # noqa: AMP003\n", "x = torch.ones(3)  # type: ignore\n"),
    ("x = torch.ones(3)  # noqa: AMP003 legacy loop\n", "x = torch.ones(3)  # legacy loop\n"),
    ("x = torch.ones(3)  # keep # noqa: AMP003 see #12\n", "x = torch.ones(3)  # keep  # see #12\n"),
    ("x = torch.ones(3)  # NOQA: amp003, amp005\n", "x = torch.ones(3)\n"),
    (f"{DEPRECATED_LINE}  # noqa: AMP001, AMP003\n    pass\n", f"{DEPRECATED_LINE}  # noqa: AMP001\n    pass\n"),
    (f"{DEPRECATED_LINE}  # noqa: E501, AMP001, AMP999\n    pass\n", f"{DEPRECATED_LINE}  # noqa: E501, AMP001\n    pass\n"),
    ("y = f(1,  # noqa: AMP003\n      2)\n", "y = f(1,\n      2)\n"),
    # A "# noqa" in a string neither silences AMP100 nor is the directive the fix edits.
    ('y = "# noqa"  # noqa: AMP003\n', 'y = "# noqa"\n'),
    ('y = "# noqa: AMP100"  # noqa: E501, AMP003\n', 'y = "# noqa: AMP100"  # noqa: E501\n'),
]


@pytest.mark.parametrize("before, after", SNAPSHOTS, ids=[s[0].split("#", 1)[1].strip()[:40] for s in SNAPSHOTS])
def test_fix_snapshot(before, after):
    fixed = _fixed(f"import torch\n{before}")
    assert fixed == f"import torch\n{after}"
    assert _fixed(fixed) == fixed  # converges
    assert [f for f in lint_text(fixed, "train.py", WITH_AMP100).findings if f.code == "AMP100"] == []


def test_message_and_position_name_the_directive():
    text = "import torch\nx = torch.ones(3)  # type: ignore  # noqa: AMP003, E501, AMP999\n"
    assert _reported(text) == [(2, 36, "Unused `noqa` directive (unused: `AMP003`; unknown: `AMP999`)")]
    finding = lint_text(text, "train.py", WITH_AMP100).findings[0]
    assert (finding.end_location.row, finding.end_location.column) == (2, 64)
    assert finding.fix is not None and finding.fix.message == "Remove unused `noqa` directive"


@pytest.mark.parametrize("line", [
    "x = torch.ones(3)  # noqa: E501, F401",  # other tools' codes
    "x = torch.ones(3)  # noqa",  # a bare noqa may be for any tool
    "x = torch.ones(3)  # noqa: AMP003, AMP100",  # the directive silences AMP100 itself
    "# noqa: AMP003",  # on a line of its own it applies to nothing amplint reports; not reported
])
def test_directives_that_are_not_reported(line):
    assert _reported(f"import torch\n{line}\n") == []


def test_a_directive_after_a_string_that_looks_like_one_is_used():
    text = f'import torch\nc = torch.cuda.amp.autocast(); x = "# noqa: AMP003"  # noqa: AMP001\n'
    assert _reported(text) == []
    assert _fixed(text) == text


def test_used_directive_is_kept_and_off_by_default():
    used = f"import torch\n{DEPRECATED_LINE}  # noqa: AMP001\n    pass\n"
    assert _reported(used) == []
    stale = "import torch\nx = 1  # noqa: AMP001\n"
    assert _reported(stale, Settings()) == []  # AMP100 is opt-in, as ruff's RUF100
    assert len(_reported(stale)) == 1


def test_ignored_rule_is_not_judged():
    # AMP001 is not run here, so its directive cannot be judged stale.
    text = f"import torch\n{DEPRECATED_LINE}  # noqa: AMP001\n    pass\n"
    assert _reported(text, Settings(extend_select=("AMP100",), ignore=("AMP001",))) == []
    assert _reported(text, Settings(extend_select=("AMP100",), per_file_ignores=(("train.py", ("AMP001",)),))) == []
    assert _reported(text, Settings(select=("AMP100", "AMP003"))) == []


def test_directive_in_a_function_the_focused_parse_would_blank():
    text = "import torch\n\ndef helper():\n    return 1  # noqa: AMP005\n\nscaler = torch.amp.GradScaler()\n"
    assert _reported(text) == [(4, 15, "Unused `noqa` directive (unused: `AMP005`)")]


def test_unfixable_keeps_the_directive():
    text = "import torch\nx = 1  # noqa: AMP003\n"
    assert _fixed(text, Settings(extend_select=("AMP100",), unfixable=("AMP100",))) == text


def test_after_fixing_the_finding_the_directive_goes_on_the_next_run(cli, files, tmp_path):
    # --add-noqa, then the code is fixed by hand: the directive is stale and --fix removes it.
    files({"train.py": f"import torch\n{DEPRECATED_LINE}\n    pass\n"})
    assert cli("check", "--add-noqa", "train.py").exit_code == 0
    assert (tmp_path / "train.py").read_text() == f"import torch\n{DEPRECATED_LINE}  # noqa: AMP001\n    pass\n"
    (tmp_path / "train.py").write_text('import torch\nwith torch.autocast("cuda"):  # noqa: AMP001\n    pass\n')
    run = cli("check", "--extend-select", "AMP100", "--output-format", "concise", "--no-cache", "train.py")
    assert run.report == "train.py:2:31: AMP100 [*] Unused `noqa` directive (unused: `AMP001`)\n"
    assert cli("check", "--extend-select", "AMP100", "--fix", "train.py").exit_code == 0
    assert (tmp_path / "train.py").read_text() == 'import torch\nwith torch.autocast("cuda"):\n    pass\n'


def test_notebook_cell_directive_is_fixed_in_its_cell(cli, tmp_path):
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("import torch"), nbformat.v4.new_code_cell("x = 1  # noqa: E501, AMP003")]
    path = tmp_path / "nb.ipynb"
    path.write_text(nbformat.writes(notebook))
    run = cli("check", "--extend-select", "AMP100", "--output-format", "concise", "--no-cache", "nb.ipynb")
    assert run.report == "nb.ipynb:cell 2:1:8: AMP100 [*] Unused `noqa` directive (unused: `AMP003`)\n"
    assert cli("check", "--extend-select", "AMP100", "--fix", "nb.ipynb").exit_code == 0
    assert nbformat.reads(path.read_text(), as_version=4).cells[1].source == "x = 1  # noqa: E501"


def test_add_noqa_does_not_suppress_amp100_itself(cli, files, tmp_path):
    text = f"import torch\nx = 1  # noqa: AMP003\n{DEPRECATED_LINE}\n    pass\n"
    files({"train.py": text})
    run = cli("check", "--add-noqa", "--extend-select", "AMP100", "train.py")
    assert run.exit_code == 0, run
    assert (tmp_path / "train.py").read_text() == f"import torch\nx = 1  # noqa: AMP003\n{DEPRECATED_LINE}  # noqa: AMP001\n    pass\n"
