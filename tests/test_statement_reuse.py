"""Parsing a document again after an edit reuses its unchanged statements, and gives the module
libcst parses from the whole text, node for node (``amplint.statement_reuse``)."""

from __future__ import annotations

import os
import random
import textwrap
from pathlib import Path

import libcst as cst
import pytest

import amplint.engine as engine
from amplint.engine import lint_text
from amplint.settings import Settings
from amplint.statement_reuse import StatementReuse

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "fixtures").rglob("*.py"))


def _same_as_whole(reuse: StatementReuse, text: str) -> cst.Module:
    module = reuse.parse(text)
    assert module.code == text
    assert module.deep_equals(cst.parse_module(text))
    nodes = list(_statements(module))
    assert len({id(node) for node in nodes}) == len(nodes), "a node appears twice in one module"
    return module


def _statements(module: cst.Module):
    for statement in module.body:
        yield statement
        body = getattr(statement, "body", None)
        if isinstance(statement, cst.ClassDef) and isinstance(body, cst.IndentedBlock):
            yield from body.body


# An indented blank line after a simple statement is the next one's in libcst, and would be taken
# for a block's footer: the text is parsed whole.
PARSED_WHOLE = "x = 1\n    \ny = 2\n"

TRAINER = '''\
"""Training loop.

Usage:
python train.py --amp
"""
import torch  # the framework
from torch.amp import GradScaler


# helpers
@torch.no_grad()
@staticmethod
def evaluate(model):
    return model.eval()


class Trainer(
    object,
):
    pass


class Loop:
    """A loop.

Not indented.
    """

    scale = 2.0

    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.scaler = GradScaler()
        # deeper comment after the block

    # a comment at the member level
    @property
    def lr(self):
        return self.optimizer.param_groups[0]["lr"]
    \n\
    def step(self, batch):
        with torch.autocast("cuda"):
            loss = self.model(batch)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
# a comment at column 0 inside the class

    def fit(self, batches):
        for batch in batches:
            self.step(batch)
        else:
            pass
        try:
            x = 1 + \\
2
        except ValueError:
            pass
        finally:
            pass


if __name__ == "__main__":
    Loop(None, None).fit([])
else:
    pass
x = 1
x = 1
# trailing comment
'''


@pytest.mark.parametrize("text", [
    TRAINER,
    TRAINER.replace("\n", "\r\n"),
    TRAINER.rstrip("\n"),  # no newline at the end
    TRAINER.replace("    ", "\t"),
    "x = 1\ny = 2\n",
    "import os\n\n\nclass A:\n  def f(self):\n    pass\n\n  def g(self):\n    pass\n",  # two-space indentation
    PARSED_WHOLE,
    "def f():\n    pass\n    \n\ndef g():\n    pass\n",  # an indented blank line after a block
    "s = '''\ndef f():\n    pass\n'''\ndef g():\n    pass\n",  # a definition inside a string
    "x = [\n1,\n2]\ny = 3\n",  # column-0 lines inside brackets
    "if a: pass\nelse:\n\tz = 1\nw = 2\n",  # the first block in an else clause
    "match x:\n    case 1:\n        pass\ny = 2\n",
    "# only a comment\n",
    "",
])
def test_the_pieces_make_the_module_libcst_parses_from_the_whole_text(text):
    reuse = StatementReuse()
    _same_as_whole(reuse, text)
    comes_apart = text.count("\n") >= 2 and text != PARSED_WHOLE
    assert reuse.parsed_whole is not comes_apart
    _same_as_whole(reuse, text)  # every piece reused
    if comes_apart:
        assert reuse.pieces_parsed == 0


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_fixture_parses_to_the_same_module(path):
    text = path.read_text(encoding="utf-8")
    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError:
        with pytest.raises(cst.ParserSyntaxError):
            StatementReuse().parse(text)
        return
    _same_as_whole(StatementReuse(), text)


def test_most_fixtures_come_apart_into_pieces():
    reuse = StatementReuse()
    apart = 0
    for path in FIXTURES:
        try:
            reuse.parse(path.read_text(encoding="utf-8"))
        except cst.ParserSyntaxError:
            continue
        apart += not reuse.parsed_whole
    assert apart > 0.8 * len(FIXTURES)


def test_an_edit_inside_a_method_parses_only_that_method():
    reuse = StatementReuse()
    _same_as_whole(reuse, TRAINER)
    edited = TRAINER.replace("            loss = self.model(batch)", "            loss = self.model(batch) * 2")
    module = _same_as_whole(reuse, edited)
    assert reuse.pieces_parsed == 1
    loop = next(s for s in module.body if isinstance(s, cst.ClassDef) and s.name.value == "Loop")
    assert any(isinstance(m, cst.FunctionDef) and m.name.value == "step" for m in loop.body.body)


def _same_as_whole_or_same_error(reuse: StatementReuse, text: str) -> bool:
    """Whether ``text`` parses; the reuse parse of it gives the whole text's module or error."""
    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError:
        with pytest.raises(cst.ParserSyntaxError):
            reuse.parse(text)
        return False
    _same_as_whole(reuse, text)
    return True


def test_edits_that_move_the_cuts_still_give_the_whole_texts_module():
    rng = random.Random(3)
    reuse = StatementReuse()
    lines = TRAINER.splitlines(keepends=True)
    for _ in range(120):
        at = rng.randrange(len(lines))
        kind = rng.choice(["comment", "delete", "copy", "dedent"])
        edited = list(lines)
        indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
        if kind == "comment":
            edited.insert(at, f"{indent}# note {rng.random()}\n")
        elif kind == "delete":
            del edited[at]
        elif kind == "copy":
            edited.insert(at, lines[at])
        else:
            edited[at] = lines[at].lstrip()
        if _same_as_whole_or_same_error(reuse, "".join(edited)):
            lines = edited


def test_two_equal_statements_are_two_nodes():
    reuse = StatementReuse()
    text = "x = 1\n\nx = 1\n\nclass A:\n    y = 2\n\n    y = 2\n"
    for _ in range(3):
        _same_as_whole(reuse, text)


def test_a_syntax_error_is_the_whole_texts_error():
    text = "import os\n\ndef f(:\n    pass\n\nx = 1\n"
    with pytest.raises(cst.ParserSyntaxError) as whole:
        cst.parse_module(text)
    with pytest.raises(cst.ParserSyntaxError) as pieces:
        StatementReuse().parse(text)
    assert str(pieces.value) == str(whole.value)


def test_the_engine_finds_the_same_with_reused_statements_as_without(monkeypatch):
    settings = Settings()
    texts = [path.read_text(encoding="utf-8") for path in FIXTURES if "AMP00" in str(path)][:60]
    without = [lint_text(text, "train.py", settings).findings for text in texts]
    monkeypatch.setattr(engine, "_statement_reuse", None)
    engine.reuse_statements()
    with_reuse, again, reused = [], [], 0
    for text in texts:
        with_reuse.append(lint_text(text, "train.py", settings).findings)
        again.append(lint_text(text, "train.py", settings).findings)  # every statement reused
        reused += engine._statement_reuse.pieces_parsed == 0 and not engine._statement_reuse.parsed_whole
    assert with_reuse == without
    assert again == without
    assert reused > len(texts) // 2  # the engine did parse through the reuse


def test_a_class_after_a_docstring_with_column_0_lines_is_reused_member_by_member():
    text = textwrap.dedent('''\
        """Module.

        Column 0 inside the docstring:
        class NotAClass:
        """
        class A:
            def f(self):
                return 1

            def g(self):
                return 2
        ''')
    reuse = StatementReuse()
    _same_as_whole(reuse, text)
    _same_as_whole(reuse, text.replace("return 2", "return 3"))
    assert reuse.pieces_parsed == 1


CORPUS = Path(os.environ.get("AMPLINT_BENCH_CACHE", Path.home() / ".cache" / "amplint-bench")) / "src"


@pytest.mark.slow
def test_real_files_and_edits_to_them_give_the_whole_texts_module():
    """On the bench corpus (``python bench/corpus.py``): 300 files of real code, each parsed, then
    edited three times at random places, with one reuse object."""
    files = sorted(CORPUS.rglob("*.py")) if CORPUS.is_dir() else []
    if not files:
        pytest.skip(f"bench corpus not downloaded at {CORPUS} (python bench/corpus.py)")
    rng = random.Random(11)
    reuse = StatementReuse()
    for path in rng.sample(files, min(300, len(files))):
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            cst.parse_module(text)
        except Exception:  # noqa: BLE001 - files libcst cannot read are not this test's
            continue
        _same_as_whole(reuse, text)
        lines = text.splitlines(keepends=True)
        for _ in range(3):
            if not lines:
                break
            at = rng.randrange(len(lines))
            edited = [*lines[:at], lines[at], *lines[at:]]
            if _same_as_whole_or_same_error(reuse, "".join(edited)):
                lines = edited


def test_pieces_no_parse_used_lately_are_forgotten():
    one_version = StatementReuse()
    one_version.parse(TRAINER)
    reuse = StatementReuse(keep_parses=4)
    for version in range(40):
        _same_as_whole(reuse, TRAINER.replace("scale = 2.0", f"scale = {version}.0"))
        assert version == 0 or reuse.pieces_parsed == 1
    # The document's pieces and the versions of the edited one that the last four parses used,
    # not the forty versions typed.
    assert reuse.kept <= one_version.kept + 3
