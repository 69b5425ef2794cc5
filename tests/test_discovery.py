"""File discovery: default excludes, .gitignore semantics, explicit files, excludes."""

from __future__ import annotations

from pathlib import Path

import pytest

from amplint.discovery import DEFAULT_EXCLUDE, IgnoreFile, discover, parse_pattern


def names(result, root: Path) -> list[str]:
    return sorted(Path(p).resolve().relative_to(root.resolve()).as_posix() for p in result.files)


def ignored(lines: list[str], path: str, is_dir: bool = False) -> bool | None:
    return IgnoreFile.from_lines(Path("/r"), lines).match(path, is_dir)


# --------------------------------------------------------------------------- the pattern matcher


@pytest.mark.parametrize(
    ("pattern", "path", "is_dir", "expected"),
    [
        ("*.py", "a.py", False, True),
        ("*.py", "deep/er/a.py", False, True),  # no slash: any depth
        ("/a.py", "a.py", False, True),
        ("/a.py", "sub/a.py", False, None),  # leading slash: anchored
        ("sub/a.py", "sub/a.py", False, True),
        ("sub/a.py", "x/sub/a.py", False, None),  # a middle slash anchors too
        ("build/", "build", True, True),
        ("build/", "build", False, None),  # trailing slash: directories only
        ("**/gen", "gen", True, True),
        ("**/gen", "a/b/gen", True, True),
        ("a/**/b", "a/b", True, True),
        ("a/**/b", "a/x/y/b", True, True),
        ("a/**", "a/x/y.py", False, True),
        ("a/**", "a", True, None),
        ("a?.py", "ab.py", False, True),
        ("a?.py", "a/.py", False, None),
        ("[ab].py", "b.py", False, True),
        ("[!ab].py", "b.py", False, None),
        ("[!ab].py", "c.py", False, True),
        ("\\#x.py", "#x.py", False, True),
        ("\\!x.py", "!x.py", False, True),
        ("x.py\\ ", "x.py ", False, True),
        ("x.py   ", "x.py", False, True),  # unescaped trailing spaces are dropped
        ("*", "anything/at/all", False, True),
    ],
)
def test_gitignore_patterns(pattern, path, is_dir, expected):
    assert ignored([pattern], path, is_dir) is expected


def test_comments_blanks_and_last_match_wins():
    assert parse_pattern("# comment") is None and parse_pattern("   ") is None and parse_pattern("") is None
    lines = ["*.py", "!keep.py", "# keep.py"]
    assert ignored(lines, "drop.py") is True
    assert ignored(lines, "keep.py") is False
    assert ignored([*lines, "keep.py"], "keep.py") is True


# --------------------------------------------------------------------------- walking


def test_finds_py_and_pyi_and_default_excludes(files, tmp_path):
    layout = {"a.py": "", "b.pyi": "", "c.txt": "", "pkg/d.py": "", "pkg/e.pyc": ""}
    for excluded in (".git", ".venv", "venv", "build", "dist", "__pycache__", "node_modules", ".tox",
                     ".mypy_cache", ".amplint_cache", ".eggs", "site-packages"):
        assert excluded in DEFAULT_EXCLUDE
        layout[f"{excluded}/x.py"] = ""
        layout[f"pkg/{excluded}/y.py"] = ""
    files(layout)
    result = discover([str(tmp_path)])
    assert names(result, tmp_path) == ["a.py", "b.pyi", "pkg/d.py"]


def test_gitignore_root_nested_negation_and_info_exclude(files, tmp_path):
    files({
        ".git/HEAD": "ref: refs/heads/main\n",
        ".git/info/exclude": "local_only.py\n",
        ".gitignore": "*_gen.py\n/top_only.py\nlogs/\n",
        "a.py": "", "x_gen.py": "", "top_only.py": "", "local_only.py": "",
        "logs/l.py": "",
        "sub/top_only.py": "",  # anchored pattern: only the root one
        "sub/.gitignore": "!keep_gen.py\nsecret.py\n",
        "sub/keep_gen.py": "", "sub/y_gen.py": "", "sub/secret.py": "",
        "other/secret.py": "",  # the nested rule does not leak to siblings
    })
    assert names(discover([str(tmp_path)]), tmp_path) == [
        "a.py", "other/secret.py", "sub/keep_gen.py", "sub/top_only.py",
    ]
    # Starting below the git root still applies the root .gitignore.
    assert names(discover([str(tmp_path / "sub")]), tmp_path) == ["sub/keep_gen.py", "sub/top_only.py"]
    assert "x_gen.py" in names(discover([str(tmp_path)], respect_gitignore=False), tmp_path)


def test_gitignore_outside_a_git_repository_is_not_used(files, tmp_path):
    files({".gitignore": "*.py\n", "a.py": ""})
    assert names(discover([str(tmp_path)]), tmp_path) == ["a.py"]


def test_explicit_file_always_linted(files, tmp_path):
    files({".git/HEAD": "", ".gitignore": "ignored.py\n", "ignored.py": "", "build/x.py": "", "script": ""})
    result = discover([str(tmp_path / "ignored.py"), str(tmp_path / "build/x.py"), str(tmp_path / "script")])
    assert names(result, tmp_path) == ["build/x.py", "ignored.py", "script"]
    forced = discover([str(tmp_path / "build/x.py"), str(tmp_path / "script")], root=tmp_path, force_exclude=True)
    assert names(forced, tmp_path) == ["script"]


def test_exclude_replaces_and_extend_exclude_adds(files, tmp_path):
    files({"build/a.py": "", "src/gen/b.py": "", "src/c_pb2.py": "", "src/d.py": "", "gen/e.py": ""})
    default = discover([str(tmp_path)], root=tmp_path)
    assert names(default, tmp_path) == ["gen/e.py", "src/c_pb2.py", "src/d.py", "src/gen/b.py"]
    extended = discover([str(tmp_path)], extend_exclude=["*_pb2.py", "src/gen"], root=tmp_path)
    assert names(extended, tmp_path) == ["gen/e.py", "src/d.py"]  # "src/gen" is anchored at the root
    replaced = discover([str(tmp_path)], exclude=["gen"], root=tmp_path)
    assert names(replaced, tmp_path) == ["build/a.py", "src/c_pb2.py", "src/d.py"]


def test_missing_and_empty_and_duplicates(files, tmp_path):
    files({"a.py": "", "empty/readme.md": ""})
    result = discover([str(tmp_path / "a.py"), str(tmp_path), "nope.py", str(tmp_path / "empty")])
    assert names(result, tmp_path) == ["a.py"]
    assert result.missing == ["nope.py"]
    assert result.empty == [str(tmp_path / "empty")]


def test_relative_paths_stay_relative(files, tmp_path, monkeypatch):
    files({"pkg/a.py": ""})
    monkeypatch.chdir(tmp_path)
    assert [str(p) for p in discover(["pkg"]).files] == ["pkg/a.py"]


def test_directory_symlink_loops_are_not_followed(files, tmp_path):
    files({"pkg/a.py": ""})
    (tmp_path / "pkg" / "loop").symlink_to(tmp_path / "pkg", target_is_directory=True)
    assert names(discover([str(tmp_path)]), tmp_path) == ["pkg/a.py"]


def test_cli_gitignore_and_extend_exclude(cli, files, fake_rules):
    files({".git/HEAD": "", ".gitignore": "skip/\n", "skip/a.py": "bad_call()\n", "keep/b.py": "bad_call()\n",
           "keep/c.py": "bad_call()\n"})
    run = cli("--output-format", "concise", "--extend-exclude", "c.py")
    assert run.report == "keep/b.py:1:1: AMP991 [*] `bad_call` is not allowed\n"
    run = cli("skip/a.py", "--output-format", "concise")  # named explicitly
    assert run.report == "skip/a.py:1:1: AMP991 [*] `bad_call` is not allowed\n"
    run = cli("--output-format", "concise", "--no-respect-gitignore", "--exclude", "c.py")
    assert run.stdout.count("AMP991") == 2
