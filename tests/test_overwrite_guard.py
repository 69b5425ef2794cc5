"""overwrite_guard: one file under any of its names, and a folder holding an input."""

from __future__ import annotations

import os

from amplint.overwrite_guard import input_inside, overwrite_refusal, overwritten_input


def test_every_name_of_one_file_is_that_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text("x = 1\n")
    os.symlink("t.py", "soft.py")
    os.link("t.py", "hard.py")
    os.mkdir("sub")
    for name in ("t.py", "./t.py", "soft.py", "hard.py", "sub/../t.py", str(tmp_path / "t.py")):
        assert overwritten_input(name, ["other.py", "t.py"]) == "t.py", name
    (tmp_path / "other.py").write_text("y = 2\n")
    assert overwritten_input("other.py", ["t.py"]) is None


def test_a_path_not_there_yet_matches_only_an_input_not_there_either(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert overwritten_input("./new.py", ["new.py"]) == "new.py"
    assert overwritten_input("new.py", ["other.py"]) is None


def test_writing_to_a_device_replaces_nothing():
    assert overwritten_input(os.devnull, [os.devnull]) is None


def test_refusal_names_the_option_and_the_input_when_spelled_otherwise(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text("x = 1\n")
    assert overwrite_refusal("--json t.py", "t.py", ["t.py"]) == "--json t.py is also an input; refusing to overwrite it"
    assert overwrite_refusal("-o ./t.py", "./t.py", ["t.py"]) == (
        "-o ./t.py is also an input (t.py); refusing to overwrite it"
    )
    assert overwrite_refusal("-o r.txt", "r.txt", ["t.py"]) is None


def test_a_folder_holding_an_input_under_any_spelling(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "a.py").write_text("x = 1\n")
    os.symlink("src", "link")
    assert input_inside("src", ["src/pkg/a.py"]) == "src/pkg/a.py"
    assert input_inside("link", ["./src/pkg"]) == "./src/pkg"
    assert input_inside("src/pkg", ["src/pkg"]) == "src/pkg"
    assert input_inside("src/pkg/cache", ["src/pkg/a.py"]) is None  # a cache inside the project is fine
    assert input_inside("elsewhere", ["src"]) is None
