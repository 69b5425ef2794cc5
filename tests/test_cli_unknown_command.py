"""A mistyped subcommand is caught with a suggestion; a word that is a real path is still linted."""

from __future__ import annotations

import pytest

DEPRECATED = "import torch\n\nwith torch.cuda.amp.autocast():\n    pass\n"


@pytest.mark.parametrize(
    "word, suggestion",
    [("chek", "check"), ("chekc", "check"), ("rulez", "rule"), ("verfy", "verify")],
)
def test_mistyped_command_suggests_the_command(cli, files, word, suggestion):
    files({"train.py": DEPRECATED})
    run = cli(word, "train.py")
    assert run.exit_code == 2
    assert run.stdout == ""
    assert run.stderr == f"amplint: error: unknown command '{word}' (did you mean '{suggestion}'?)\n"


def test_a_directory_named_like_a_typo_is_linted(cli, files):
    files({"chek/train.py": DEPRECATED})
    run = cli("chek", "--output-format", "concise")
    assert run.exit_code == 1
    assert run.stdout.startswith("chek/train.py:3:6: AMP001")


def test_a_word_unlike_any_command_is_a_missing_path(cli):
    run = cli("trainer")
    assert run.exit_code == 2
    assert "no such file or directory: trainer" in run.stderr
    assert "unknown command" not in run.stderr


def test_a_missing_file_name_is_not_taken_for_a_command(cli):
    run = cli("check.py")
    assert "no such file or directory: check.py" in run.stderr
    assert "unknown command" not in run.stderr
