"""``amplint check --add-noqa``: every current finding suppressed in place, other tools' directives kept."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import amplint
from amplint.add_noqa import add_noqa_to_files
from amplint.add_noqa_text import add_directives, add_directives_at
from amplint.jobs import Job, process_file
from amplint.model import FileResult, Location
from amplint.settings import Settings

AUTOCAST = "torch.cuda.amp.autocast()"


def added(text: str) -> str:
    new_text, _, _ = add_directives(text, amplint.lint_source(text, "t.py"))
    return new_text


@pytest.mark.parametrize(
    "line, expected",
    [
        (f"ctx = {AUTOCAST}", f"ctx = {AUTOCAST}  # noqa: AMP001"),
        (f"ctx = {AUTOCAST}   ", f"ctx = {AUTOCAST}  # noqa: AMP001"),
        (f"ctx = {AUTOCAST}  # noqa: E501", f"ctx = {AUTOCAST}  # noqa: E501, AMP001"),
        (f"ctx = {AUTOCAST}  # noqa:E501,W291", f"ctx = {AUTOCAST}  # noqa: E501, W291, AMP001"),
        (f"ctx = {AUTOCAST}  # NOQA: E501 long line", f"ctx = {AUTOCAST}  # NOQA: E501, AMP001 long line"),
        (f"ctx = {AUTOCAST}  # type: ignore[attr]", f"ctx = {AUTOCAST}  # type: ignore[attr]  # noqa: AMP001"),
        (f"s = '# noqa: E501'; ctx = {AUTOCAST}", f"s = '# noqa: E501'; ctx = {AUTOCAST}  # noqa: AMP001"),
    ],
)
def test_directive_is_added_or_merged(line, expected):
    assert added(f"import torch\n{line}\n") == f"import torch\n{expected}\n"


def test_several_codes_on_one_line_are_listed_once_sorted():
    text = "import torch\nx = torch.cuda.amp.GradScaler(); torch.is_autocast_enabled()\n"
    assert added(text).splitlines()[1].endswith("  # noqa: AMP001, AMP014")


def test_line_ending_inside_a_string_is_not_touched():
    text = f'import torch\nctx = {AUTOCAST}; doc = """\ntext\n"""\n'
    new_text, count, skipped = add_directives(text, amplint.lint_source(text, "t.py"))
    assert (new_text, count, skipped) == (text, 0, [2])


def test_crlf_and_a_missing_final_newline_are_kept():
    text = f"import torch\r\nctx = {AUTOCAST}\r\nother = {AUTOCAST}"
    assert added(text) == f"import torch\r\nctx = {AUTOCAST}  # noqa: AMP001\r\nother = {AUTOCAST}  # noqa: AMP001"


def test_cli_adds_directives_and_the_next_check_passes(cli, files, tmp_path):
    files({
        "train.py": f"import torch\nctx = {AUTOCAST}  # noqa: E501\nscaler = torch.cuda.amp.GradScaler()\n",
        "clean.py": "x = 1\n",
    })
    (tmp_path / "legacy.py").write_bytes(
        b"# -*- coding: latin-1 -*-\nimport torch\nname = '\xe9'; ctx = torch.cuda.amp.autocast()\n"
    )
    run = cli("check", "--add-noqa", ".")
    assert run.exit_code == 0, run
    assert run.stderr == "Added 3 noqa directives.\n"
    assert (tmp_path / "train.py").read_text() == (
        f"import torch\nctx = {AUTOCAST}  # noqa: E501, AMP001\nscaler = torch.cuda.amp.GradScaler()  # noqa: AMP001\n"
    )
    assert (tmp_path / "legacy.py").read_bytes().endswith(b"'\xe9'; ctx = torch.cuda.amp.autocast()  # noqa: AMP001\n")
    assert (tmp_path / "clean.py").read_text() == "x = 1\n"
    again = cli("check", "--add-noqa", ".")
    assert (again.exit_code, again.stderr) == (0, "Added 0 noqa directives.\n")
    assert cli("check", "--no-cache", ".").exit_code == 0


def test_a_string_that_looks_like_a_directive_converges_in_one_run(cli, files, tmp_path):
    files({
        "listed.py": 'import torch\nc = torch.cuda.amp.autocast(enabled="# noqa: AMP003" != "")\n',
        "bare.py": 'import torch\nc = torch.cuda.amp.autocast(enabled="# noqa" != "")\n',
    })
    run = cli("check", "--add-noqa", ".")
    assert (run.exit_code, run.stderr) == (0, "Added 2 noqa directives.\n")
    for name, string in (("listed.py", "# noqa: AMP003"), ("bare.py", "# noqa")):
        expected = f'import torch\nc = torch.cuda.amp.autocast(enabled="{string}" != "")  # noqa: AMP001\n'
        assert (tmp_path / name).read_text() == expected
    again = cli("check", "--add-noqa", ".")
    assert (again.exit_code, again.stderr) == (0, "Added 0 noqa directives.\n")
    assert cli("check", "--no-cache", ".").exit_code == 0


@pytest.mark.parametrize("line_end", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("final_line_end", [True, False])
def test_directives_added_are_the_ones_read(line_end, final_line_end):
    rows = ["import torch", f'ctx = {AUTOCAST}; s = "# noqa: E501"', f"other = {AUTOCAST}"]
    text = line_end.join(rows) + (line_end if final_line_end else "")
    new_text, count, skipped = add_directives(text, amplint.lint_source(text, "t.py"))
    assert (count, skipped) == (2, [])
    assert amplint.lint_source(new_text, "t.py") == []
    assert new_text.split(line_end)[1].endswith('"# noqa: E501"  # noqa: AMP001')


def test_a_code_already_listed_is_not_counted_again():
    text = f"ctx = {AUTOCAST}  # noqa: E501, AMP001\nx = 1  # noqa\n"
    assert add_directives_at(text, {1: {"AMP001"}, 2: {"AMP003"}}) == (text, 0, [])


def test_flake8_still_reads_the_merged_directive(files, tmp_path):
    long_line = f"ctx = {AUTOCAST}  # noqa: E501 " + "x" * 80
    files({"train.py": f"import torch\n{long_line}\n"})
    subprocess.run([sys.executable, "-m", "amplint", "check", "--add-noqa", "train.py"], cwd=tmp_path, check=True, capture_output=True)
    assert "# noqa: E501, AMP001" in (tmp_path / "train.py").read_text()
    run = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "AMP,E501", "train.py"],
        cwd=tmp_path, capture_output=True, text=True,
    )
    assert (run.returncode, run.stdout) == (0, "")


def test_unplaceable_finding_is_a_warning_and_a_broken_file_an_error(cli, files, tmp_path):
    inside_string = f'import torch\nctx = {AUTOCAST}; doc = """\ntext\n"""\n'
    files({"a.py": inside_string, "broken.py": "import torch\nwith torch.autocast(:\n", "b.py": f"import torch\nctx = {AUTOCAST}\n"})
    run = cli("check", "--add-noqa", ".")
    assert run.exit_code == 2
    assert "amplint: warning: a.py:2: no comment can go at the end of this line" in run.stderr
    assert "amplint: error: broken.py:2:" in run.stderr and "(not suppressible)" in run.stderr
    assert run.stderr.endswith("Added 1 noqa directive.\n")
    assert (tmp_path / "a.py").read_text() == inside_string
    assert (tmp_path / "b.py").read_text().endswith("# noqa: AMP001\n")


@pytest.mark.parametrize("extra, message", [(["--fix"], "cannot be combined with --fix"), (["-"], "cannot read stdin")])
def test_add_noqa_refuses_fix_and_stdin(cli, extra, message):
    run = cli("check", "--add-noqa", *extra, input="x = 1\n")
    assert run.exit_code == 2
    assert message in run.stderr


# --------------------------------------------------------------------------- notebooks

NOTEBOOKS = Path(__file__).resolve().parent.parent / "fixtures" / "notebooks"
# What --add-noqa writes: a new directive, or codes added to another tool's directive.
ADDED = re.compile(r"  # noqa: AMP\d{3}(?:, AMP\d{3})*|(?:, AMP\d{3})+")


def _code_sources(raw: bytes) -> list[str]:
    cells = json.loads(raw.decode("utf-8-sig"))["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]


def _assert_only_directives_were_added(before: bytes, after: bytes) -> None:
    """The file loads as the same notebook, and each changed JSON line only gained directives."""
    nbformat.validate(nbformat.reads(after.decode("utf-8-sig"), as_version=4))
    old, new = json.loads(before.decode("utf-8-sig")), json.loads(after.decode("utf-8-sig"))
    assert [c["cell_type"] for c in new["cells"]] == [c["cell_type"] for c in old["cells"]]
    for cell_old, cell_new in zip(old["cells"], new["cells"]):
        assert {k: v for k, v in cell_new.items() if k != "source"} == {k: v for k, v in cell_old.items() if k != "source"}
    assert {k: v for k, v in new.items() if k != "cells"} == {k: v for k, v in old.items() if k != "cells"}
    old_lines, new_lines = before.split(b"\n"), after.split(b"\n")
    assert len(new_lines) == len(old_lines)
    for old_line, new_line in zip(old_lines, new_lines):
        assert ADDED.sub("", new_line.decode("utf-8-sig")) == old_line.decode("utf-8-sig")


def test_notebook_gets_its_directives_in_the_cells(cli, tmp_path):
    path = tmp_path / "nb.ipynb"
    shutil.copy(NOTEBOOKS / "train_with_outputs.ipynb", path)
    before = path.read_bytes()
    run = cli("check", "--no-cache", "--add-noqa", "nb.ipynb")
    assert (run.exit_code, run.stderr) == (0, "Added 4 noqa directives.\n"), run
    after = path.read_bytes()
    _assert_only_directives_were_added(before, after)
    cell_3, cell_5 = _code_sources(after)[1:]
    assert cell_3.splitlines()[0] == "scaler = torch.cuda.amp.GradScaler()  # expect: AMP001  # noqa: AMP001"
    assert cell_3.splitlines()[6].endswith("  # expect: AMP003  # noqa: AMP003")
    assert cell_5.endswith("# expect: AMP006  # noqa: AMP006")  # the cell still has no final newline
    assert cli("check", "--no-cache", "nb.ipynb").exit_code == 0


def test_add_noqa_on_a_directory_of_notebooks_keeps_every_one_loadable(cli, tmp_path):
    shutil.copytree(NOTEBOOKS, tmp_path / "proj")
    run = cli("check", "--no-cache", "--add-noqa", "proj")
    assert (run.exit_code, run.stderr) == (0, "Added 5 noqa directives.\n"), run
    for original in sorted(NOTEBOOKS.glob("*.ipynb")):
        _assert_only_directives_were_added(original.read_bytes(), (tmp_path / "proj" / original.name).read_bytes())
    assert (tmp_path / "proj" / "clean.ipynb").read_bytes() == (NOTEBOOKS / "clean.ipynb").read_bytes()
    magics = _code_sources((tmp_path / "proj" / "magics.ipynb").read_bytes())
    assert magics[1] == "%%bash\nnvidia-smi\necho done"
    assert magics[2].startswith("%%time\nfiles = !ls data\nmodel?\nwith autocast():  # expect: AMP001  # noqa: AMP001\n")
    assert cli("check", "--no-cache", "proj").exit_code == 0
    again = cli("check", "--no-cache", "--add-noqa", "proj")
    assert (again.exit_code, again.stderr) == (0, "Added 0 noqa directives.\n")


def _odd_notebook() -> dict:
    """CRLF cell lines, magics, another tool's directive, non-ASCII text, a cell kept as one string."""
    return {
        "cells": [
            {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Entraînement ✓"]},
            {"cell_type": "code", "execution_count": 1, "id": "setup", "metadata": {},
             "outputs": [{"name": "stdout", "output_type": "stream", "text": ["prêt ✓\n"]}],
             "source": ["%matplotlib inline\r\n", "!pip install -q timm\r\n", "import torch\r\n", "# données: é\r\n",
                        "scaler = torch.cuda.amp.GradScaler()  # noqa: E501\r\n", "files = !ls\r\n"]},
            {"cell_type": "code", "execution_count": None, "id": "loop", "metadata": {}, "outputs": [],
             "source": "with torch.cuda.amp.autocast():\n    pass"},
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4, "nbformat_minor": 5,
    }


LAYOUTS = {
    "bom": lambda nb: b"\xef\xbb\xbf" + (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").encode(),
    "crlf-file": lambda nb: (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").replace("\n", "\r\n").encode(),
    "ascii-sorted": lambda nb: json.dumps(nb, indent=2, ensure_ascii=True, sort_keys=True).encode(),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_notebook_with_crlf_cells_magics_and_a_bom_converges(cli, tmp_path, layout):
    path = tmp_path / "odd.ipynb"
    before = LAYOUTS[layout](_odd_notebook())
    path.write_bytes(before)
    run = cli("check", "--no-cache", "--add-noqa", "odd.ipynb")
    assert (run.exit_code, run.stderr) == (0, "Added 2 noqa directives.\n"), run
    after = path.read_bytes()
    assert after.startswith(b"\xef\xbb\xbf") == (layout == "bom")
    _assert_only_directives_were_added(before.replace(b"\r\n", b"\n"), after.replace(b"\r\n", b"\n"))
    assert _code_sources(after) == [
        "%matplotlib inline\r\n!pip install -q timm\r\nimport torch\r\n# données: é\r\n"
        "scaler = torch.cuda.amp.GradScaler()  # noqa: E501, AMP001\r\nfiles = !ls\r\n",
        "with torch.cuda.amp.autocast():  # noqa: AMP001\n    pass",
    ]
    assert cli("check", "--no-cache", "odd.ipynb").exit_code == 0
    again = cli("check", "--no-cache", "--add-noqa", "odd.ipynb")
    assert (again.exit_code, again.stderr, path.read_bytes()) == (0, "Added 0 noqa directives.\n", after)


def _linted_notebook(tmp_path: Path, source: str) -> tuple[Path, FileResult]:
    path = tmp_path / "nb.ipynb"
    path.write_text(nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])))
    return path, process_file(Job(str(path), Settings(), display="nb.ipynb"))


def test_a_finding_on_a_magic_line_is_not_placeable_and_the_rest_is_added(tmp_path):
    path, result = _linted_notebook(tmp_path, "files = !ls\nimport torch\nctx = torch.cuda.amp.autocast()")
    on_magic = dataclasses.replace(result.findings[0], location=Location(1, 1), end_location=Location(1, 5), noqa_row=None)
    outcome = add_noqa_to_files([dataclasses.replace(result, findings=[*result.findings, on_magic])], {"nb.ipynb": str(path)})
    assert (outcome.added, outcome.not_placeable, outcome.errors) == (1, ["nb.ipynb:cell 1:1"], [])
    assert _code_sources(path.read_bytes()) == ["files = !ls\nimport torch\nctx = torch.cuda.amp.autocast()  # noqa: AMP001"]


def test_a_finding_outside_the_cells_leaves_the_notebook_as_it_is(tmp_path):
    path, result = _linted_notebook(tmp_path, "import torch\nctx = torch.cuda.amp.autocast()")
    before = path.read_bytes()
    result.findings[0].location = Location(9, 1)
    result.findings[0].noqa_row = None
    outcome = add_noqa_to_files([result], {"nb.ipynb": str(path)})
    assert [e.message for e in outcome.errors] == ["nb.ipynb: not changed: a finding's line cannot be found in the notebook's cells"]
    assert (outcome.added, path.read_bytes()) == (0, before)


def test_a_notebook_edited_since_it_was_linted_is_not_changed(tmp_path):
    path, result = _linted_notebook(tmp_path, "import torch\nctx = torch.cuda.amp.autocast()")
    path.write_text(nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("# new first line\n" + "x = 1")])))
    edited = path.read_bytes()
    outcome = add_noqa_to_files([result], {"nb.ipynb": str(path)})
    assert [e.message for e in outcome.errors] == ["nb.ipynb: not changed: the notebook changed on disk since it was linted; run again"]
    assert path.read_bytes() == edited


def test_a_notebook_edited_while_the_directives_are_written_is_not_overwritten(tmp_path, monkeypatch):
    import amplint.fixwrite

    path, result = _linted_notebook(tmp_path, "import torch\nctx = torch.cuda.amp.autocast()")
    saved_by_the_user = path.read_bytes() + b"\n"
    real_write_fix = amplint.fixwrite.write_fix

    def edit_then_write(target, original, fixed, name=None):
        path.write_bytes(saved_by_the_user)
        real_write_fix(target, original, fixed, name)

    monkeypatch.setattr(amplint.fixwrite, "write_fix", edit_then_write)
    outcome = add_noqa_to_files([result], {"nb.ipynb": str(path)})
    assert [e.message for e in outcome.errors] == [
        "nb.ipynb: changed on disk while it was being fixed; fixes not written, run again"
    ]
    assert path.read_bytes() == saved_by_the_user


def test_a_read_only_notebook_is_reported_and_not_written(cli, tmp_path):
    path = tmp_path / "nb.ipynb"
    shutil.copy(NOTEBOOKS / "train_with_outputs.ipynb", path)
    path.chmod(0o444)
    run = cli("check", "--no-cache", "--add-noqa", "nb.ipynb")
    assert run.exit_code == 2
    assert "amplint: error: nb.ipynb: file is read-only, fixes not written" in run.stderr
    assert path.read_bytes() == (NOTEBOOKS / "train_with_outputs.ipynb").read_bytes()


def test_unused_noqa_is_removed_from_a_notebook_cell_keeping_its_bom(cli, tmp_path):
    notebook = _odd_notebook()
    notebook["cells"][1]["source"][4] = 'scaler = torch.amp.GradScaler("cuda")  # noqa: E501\r\n'
    notebook["cells"][2]["source"] = "x = torch.ones(3)  # noqa: AMP003\ny = 1  # noqa: E501, AMP005\n"
    path = tmp_path / "nb.ipynb"
    before = LAYOUTS["bom"](notebook)
    path.write_bytes(before)
    run = cli("check", "--no-cache", "--extend-select", "AMP100", "--fix", "nb.ipynb")
    assert run.exit_code == 0, run
    after = path.read_bytes()
    assert after.startswith(b"\xef\xbb\xbf")
    nbformat.validate(nbformat.reads(after.decode("utf-8-sig"), as_version=4))
    assert _code_sources(after)[1] == "x = torch.ones(3)\ny = 1  # noqa: E501\n"
    assert after.replace(b"x = torch.ones(3)\\n", b"x = torch.ones(3)  # noqa: AMP003\\n").replace(
        b"# noqa: E501\\n", b"# noqa: E501, AMP005\\n") == before


def test_the_notebook_writer_refuses_what_would_not_load_as_the_same_notebook(tmp_path):
    from amplint.fixwrite import WriteError
    from amplint.notebook_file import write_notebook

    path = tmp_path / "nb.ipynb"
    shutil.copy(NOTEBOOKS / "train_with_outputs.ipynb", path)
    before = path.read_bytes()
    one_cell_less = json.loads(before)
    del one_cell_less["cells"][0]
    for rewritten in ('{  # noqa: AMP001\n "cells": []}', json.dumps(one_cell_less)):
        with pytest.raises(WriteError, match="would not load as the same notebook"):
            write_notebook(path, before, rewritten, "nb.ipynb")
    assert path.read_bytes() == before
