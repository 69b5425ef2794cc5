"""The project pass reads only what a file that asks needs: the modules its scaler-holding code
hands training state to, and nothing for any other file of the run."""

from __future__ import annotations

import ast
import random
import re
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amplint.jobs import Job, run_jobs
from amplint.project import phase
from amplint.project.asking import _TRAINING_STATE, _TrainingState, names_handed_training_state
from amplint.project.imports import imports_of, scan_imports
from amplint.project.resolve import normalized
from amplint.settings import Settings

TRAIN = '''import torch

from helpers import save_checkpoint


def main(model, loader, epochs, output_dir):
    optimizer = torch.optim.AdamW(model.parameters())
    scaler = torch.amp.GradScaler("cuda")
    for epoch in range(epochs):
        for batch in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(batch)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        save_checkpoint(model, optimizer, epoch, output_dir)
'''

HELPERS = '''import os

import torch


def save_checkpoint(model, optimizer, epoch, output_dir):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, os.path.join(output_dir, "last.pt"))
'''

# Everything a summary records, in a module no file that holds a scaler imports.
MODELS = '''import torch


def build(model, optimizer, loss):
    model.half()
    model.to(torch.float16)
    loss.backward()
    optimizer.step()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, "m.pt")
'''

# Imports the models but holds no scaler: it asks nothing.
EVALUATE = '''import torch

import models


def evaluate(model, optimizer, batch):
    models.build(model, optimizer, model(batch).float())
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name, text in (("train.py", TRAIN), ("helpers.py", HELPERS), ("models.py", MODELS), ("evaluate.py", EVALUATE)):
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.fixture
def summarised(monkeypatch) -> list[str]:
    paths: list[str] = []
    summarize = phase.summarize_path

    def recording(path, cache_dir=None, only=None):
        paths.append(path)
        return summarize(path, cache_dir, only)

    monkeypatch.setattr(phase, "summarize_path", recording)
    return paths


def _run(root: Path, **settings) -> dict:
    options = Settings(select=("AMP006",), root=str(root), **settings)
    jobs = [Job(str(path), options, display=path.name) for path in sorted(root.glob("*.py"))]
    return {result.filename: result for result in run_jobs(jobs, 1)}


def test_only_the_helper_the_scaler_file_hands_its_state_to_is_summarised(project, summarised):
    results = _run(project)
    assert summarised == [normalized(project / "helpers.py")]
    (finding,) = results["train.py"].findings
    assert finding.location.row == 16 and "`save_checkpoint` in helpers.py" in finding.message
    assert results["models.py"].findings == [] and results["evaluate.py"].findings == []


def test_nothing_is_summarised_when_no_file_holds_a_scaler(project, summarised):
    (project / "train.py").write_text(TRAIN.replace('    scaler = torch.amp.GradScaler("cuda")\n', "").replace("scaler.", "opt_wrapper."))
    _run(project)
    assert summarised == []


def test_nothing_is_summarised_without_project_analysis(project, summarised):
    assert _run(project, project_analysis=False)["train.py"].findings == []
    assert summarised == []


def test_an_edited_helper_is_read_again_in_the_same_process(project):
    assert len(_run(project)["train.py"].findings) == 1
    (project / "helpers.py").write_text(HELPERS.replace(
        "def save_checkpoint(model, optimizer, epoch, output_dir):", "def save_checkpoint(model, optimizer, epoch, output_dir, scaler=None):",
    ).replace('"epoch": epoch}', '"epoch": epoch, "scaler": scaler.state_dict()}'))
    (finding,) = _run(project)["train.py"].findings
    assert "without its `scaler` argument" in finding.message


@pytest.mark.parametrize(("text", "handed"), [
    ("save(model, optimizer)", {"save"}),
    ("utils.save(ckpt_path)", {"utils"}),
    ("trainer.utils.save(optimizer)", {"trainer"}),  # ``utils`` is an attribute here, not a head
    ("x1.utils(optimizer)", set()),
    ("save (model)\n" + " " * 500 + "optimizer", set()),  # the state is out of the call's reach
    ("save(model, Optional[int])", set()),  # ``Opt`` of ``Optional`` is not ``opt``
    ("save(model, opt)", {"save"}),
    ("save(\u017fcaler)", {"save"}),  # the long s matches ``s`` case-insensitively
    ("mysave(optimizer); utils = 1", set()),
])
def test_an_import_is_followed_only_when_called_with_training_state(text, handed):
    assert names_handed_training_state(text, {"save", "utils", "trainer"}) == handed


def test_training_state_windows_answer_as_the_pattern_searched_in_each_window():
    pieces = ["opt", "OPT", "Optional", "optim", "ckpt", "cKpt", "checkpoint", "state_dict", "SCALER",
              "x", "_", "1", " ", ".", "(", "\u00e9", "\u0130", "\u0131", "\u017f", "\u212a", "\n", "o", "p", "t"]
    rng = random.Random(12)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 20)))
        state, indexed = _TrainingState(text), _TrainingState(text)
        indexed.index()
        for _ in range(5):
            start = rng.randint(0, len(text) + 2)
            end = start + rng.randint(0, 10)
            expected = _TRAINING_STATE.search(text, start, end) is not None
            # A window read alone, one read after others (the text is indexed once they have read
            # as much as it holds), and one looked up in the index.
            assert _TrainingState(text).within(start, end) == expected, (text, start, end)
            assert state.within(start, end) == expected, (text, start, end)
            assert indexed.within(start, end) == expected, (text, start, end)



def test_imports_are_found_in_a_file_with_windows_line_endings():
    # Fifty short lines first: each \r\n counted as one character would shift the later rows.
    text = "a = 1\r\n" * 50 + (
        "try:\r\n    from utils import save_checkpoint\r\nexcept ImportError:\r\n    pass\r\n"
        "from .helpers import (\r\n    resume,\r\n)\r\nimport torch\r\ndef f():\r\n    import os\r\n"
    )
    found = {(name.local, name.module) for name in scan_imports(text)}
    assert found == {("torch", "torch"), ("save_checkpoint", "utils"), ("resume", "helpers")}
    assert scan_imports(text) == scan_imports(text.replace("\r\n", "\n"))
    # Old Mac line endings (a lone \r): Python reads them as line breaks, and so does the scan.
    assert scan_imports(text.replace("\r\n", "\r")) == scan_imports(text.replace("\r\n", "\n"))


# The first implementations, kept to check the quicker ones against: a walk back from every
# ``(``, with the training-state pattern searched in each call's reach, and the text split into
# lines.
def reference_names_handed_training_state(text: str, names: set[str]) -> set[str]:
    handed: set[str] = set()
    paren = text.find("(")
    while paren >= 0:
        head = _reference_call_head(text, paren)
        if head is not None and head in names and _TRAINING_STATE.search(text, paren + 1, paren + 1 + 400):
            handed.add(head)
        paren = text.find("(", paren + 1)
    return handed


def _reference_call_head(text: str, paren: int) -> str | None:
    end = paren
    while end > 0 and text[end - 1].isspace():
        end -= 1
    head = None
    while True:
        begin = end
        while begin > 0 and _is_word(text[begin - 1]):
            begin -= 1
        if begin == end:
            return head
        if text[begin] in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_":
            head = text[begin:end]
        if begin == 0 or text[begin - 1] != ".":
            return head
        end = begin - 1


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


_REFERENCE_IMPORT_START = re.compile(r"([ \t]*)(?:from[ \t]+[\w.]+[ \t]+import\b|import[ \t]+\w)")


def reference_scan_imports(text: str) -> tuple:
    from amplint.project.quiet_parse import parse

    statements: list[ast.stmt] = []
    lines = re.split(r"\r\n|\r|\n", text)
    offsets = [0] + [match.end() for match in re.finditer(r"\r\n|\r|\n", text)]
    for row, offset in enumerate(offsets):  # every line, whatever its line break
        match = _REFERENCE_IMPORT_START.match(text, offset)
        if match is None:
            continue
        if match.group(1) and not _reference_in_top_level_block(lines, row):
            continue
        end = row
        chunk = lines[row]
        while end + 1 < len(lines) and (chunk.count("(") > chunk.count(")") or chunk.rstrip().endswith("\\")):
            end += 1
            chunk += "\n" + lines[end]
        tree = parse(textwrap.dedent(chunk))
        if tree is not None:
            statements.extend(tree.body)
    return tuple(imports_of(ast.Module(body=statements, type_ignores=[])))


def _reference_in_top_level_block(lines: list[str], row: int) -> bool:
    for previous in range(row - 1, -1, -1):
        line = lines[previous]
        if line and not line[0].isspace() and not line.startswith("#"):
            return line.startswith(("try", "except", "else", "if ", "elif ", "finally"))
    return False


# What a call's head and its training state are made of, and what may come between: digits and
# non-ASCII letters (which cannot start a head), a combining mark and other characters ``\w``
# or ``str.isspace`` treat unlike ASCII, the four characters that fold to ASCII letters, and
# stretches long enough to put the state out of a call's reach.
_CALL_PIECES = st.sampled_from([
    "save", "utils", "trainer", "x1", "a", "_", "1", "\u0663", "\u00b2", "\u00e9", "\u0301", "\u0130", "\u0131",
    "\u017f", "\u212a", "\u03a3", "optimizer", "optim", "opt", "Opt", "OPT", "Optional", "ckpt", "checkpoint",
    "state_dict", "scaler", "SCALER", ".", " ", "\n", "\r\n", "\t", "\x0c", "\u00a0", "\u2028", "\x1c", "(", ")", ",",
    "=", "+", "[", "'", '"', "#", "\\", " " * 390, "x" * 120,
])
_CHAIN_PARTS = st.sampled_from(
    ["save", "utils", "trainer", "x1", "a", "_", "1", "1a", "\u00e9", "\u00e9x", "\u0663", "a\u0301", "\u0301a", "\u00b2",
     "\u0130", "\u017f", "\u212a"]
)
_CALLS = st.tuples(
    st.sampled_from(["", ".", "..", " ", "x", "1", "\u00e9", "+", "(", "\u0301"]),
    st.lists(st.tuples(_CHAIN_PARTS, st.sampled_from([".", ".", ".", "..", " .", ". ", "\n."])), max_size=4),
    _CHAIN_PARTS,
    st.sampled_from(["", "", " ", "\n", " \t", "\x0c", "\u00a0", "\u2028", "\r\n", "\x1c", ".", "\u0301"]),
    st.sampled_from([0, 0, 0, *range(385, 401)]),  # spaces that put what follows near the reach's end
    st.lists(_CALL_PIECES, max_size=6),
).map(lambda call: call[0] + "".join(part + dot for part, dot in call[1]) + call[2] + call[3] + "(" + " " * call[4]
      + "".join(call[5]))
_ASKED_NAMES = st.sets(st.sampled_from(
    ["save", "utils", "trainer", "x1", "a", "_", "opt", "scaler", "\u00e9", "\u00e9x", "1", "1a", "a.b", "", "save ",
     "\u0130", "a\u0301"]
))


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.one_of(_CALLS, _CALL_PIECES), max_size=10).map("".join), _ASKED_NAMES)
def test_handed_names_are_those_the_walk_back_from_each_parenthesis_finds(text, names):
    assert names_handed_training_state(text, names) == reference_names_handed_training_state(text, names)


# Lines of a module, each ended by one of Python's three line breaks: import statements (some
# going on over lines), the blocks a module-level import may sit in and those it may not, and
# lines that only look like them.
_BLOCK_LINES = st.sampled_from(["try:", "if x:", "else:", "def f():", "class C:", "tryst = 1", "# c", "\x0cif x:", ""])
_MODULE_LINES = st.tuples(
    st.sampled_from(["", "", "    ", "\t", " ", "\x0c", "\u00a0"]),
    st.sampled_from([
        "import os", "import a.b as c, d", "from a import b", "from . import (", "from .x import (b,", "c)", "b, c)",
        "from a import b as c  # (", "import os \\", "  , sys", "import", "from a import", "from a import *", "try:",
        "except ImportError:", "else:", "if x:", "elif y:", "finally:", "def f():", "class C:", "tryst = 1", "x = 1",
        "# import os", "x = , ", "import \u00e9", "if(x): import os", "pass", "",
    ]),
    st.sampled_from(["\n", "\r\n", "\r"]),
).map("".join)
_INDENTED_IMPORTS = st.tuples(
    st.sampled_from(["    ", "\t", " "]), st.sampled_from(["import os", "from a import (b,", "import a \\"]),
    st.sampled_from(["\n", "\r\n", "\r"]),
).map("".join)


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.one_of(_MODULE_LINES, st.tuples(_BLOCK_LINES, st.sampled_from(["\n", "\r\n", "\r"])).map("".join),
                         _INDENTED_IMPORTS, st.sampled_from(["import", "(", ")", "\\", "\r", "#", " ", "os"])),
                max_size=14).map("".join))
def test_scanned_imports_are_those_found_from_the_text_split_into_lines(text):
    assert scan_imports(text) == reference_scan_imports(text)


def test_the_call_pattern_reads_words_and_spaces_as_the_str_methods_do():
    every_character = "".join(map(chr, range(0x110000)))
    assert set(re.findall(r"\w", every_character)) == {char for char in every_character if char.isalnum() or char == "_"}
    assert set(re.findall(r"\s", every_character)) == {char for char in every_character if char.isspace()}


def test_a_tree_outside_the_root_finds_its_packages_from_where_python_would(tmp_path):
    """Run from another folder on an absolute path, a package's modules are searched from the
    first folder above it without an ``__init__.py`` (its ``sys.path`` entry), so the answers do
    not depend on the working directory."""
    from amplint.project.resolve import search_folders

    tree = tmp_path / "tree"
    (tree / "apps").mkdir(parents=True)
    (tree / "apps" / "__init__.py").write_text("")
    (tree / "scripts").mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert search_folders(tree / "apps" / "train.py", elsewhere) == [tree / "apps", tree]
    assert search_folders(tree / "scripts" / "train.py", elsewhere) == [tree / "scripts"]
    assert search_folders(tree / "apps" / "train.py", tree) == [tree / "apps", tree]


def test_a_config_path_outside_the_root_is_read_from_the_project_it_belongs_to(tmp_path):
    """A path a script opens relative to where it is launched: for a file outside the root, the
    nearest folder above it that marks a project, else the file system's root."""
    from amplint.project.resolve import launch_root

    repo = tmp_path / "repo"
    (repo / "train").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = repo / "train" / "run.py"
    assert launch_root(script, repo) == repo
    assert launch_root(script, elsewhere) == Path(script.anchor)
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert launch_root(script, elsewhere) == repo


_STAR_AS_WRITTEN = re.compile(rb"\bimport[ \t]*\*")


@pytest.mark.parametrize("data", [
    b"from pkg.mod import *\n", b"import *", b"from a import  \t*", b"reimport *", b"_import *", b"9import *",
    b"x.import *", b"\xc3\xa9import *", b"from a import (\n    *)", b"import\n*", b"# import *\n", b"",
    b"from a import b\nfrom c import *", b"importimport *",
])
def test_a_star_import_is_found_as_the_word_boundary_pattern_finds_it(data):
    from amplint.project.asking import imports_star

    assert imports_star(data) == (_STAR_AS_WRITTEN.search(data) is not None)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"import", b" ", b"\t", b"*", b"x", b"_", b"9", b".", b"\n", b"\xc3\xa9", b"(", b"re"]),
                max_size=12))
def test_a_star_import_is_found_as_the_pattern_finds_it_in_any_text(parts):
    from amplint.project.asking import imports_star

    data = b"".join(parts)
    assert imports_star(data) == (_STAR_AS_WRITTEN.search(data) is not None)


def test_an_import_statement_that_does_not_parse_leaves_the_others_found():
    # The import statements are parsed together; one that cannot be parsed is dropped alone.
    text = "import os\nimport torch.nn as nn\ntry:\n    from apex import amp\nexcept ImportError:\n    pass\nfrom a import (b,\n"
    assert {(name.local, name.module) for name in scan_imports(text)} == {("os", "os"), ("nn", "torch.nn"), ("amp", "apex")}
