"""The cache never deletes or hides what amplint did not write.

Each case here once lost user data: pruning ran ``rmtree`` on every folder in the cache root and
wrote a ``.gitignore`` of ``*`` into whatever folder it was given.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from amplint.cache import MAX_AGE_S, Cache, CacheDirError, cache_version, check_cache_root
from amplint.model import FileResult
from amplint.settings import Settings

CODE = "import torch\nwith torch.cuda.amp.autocast():\n    pass\n"


def _tree(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` (links as their target text), to compare before and after."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = Path(dirpath, name)
            rel = str(path.relative_to(root))
            out[rel] = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
    return out


def _project(root: Path) -> None:
    for rel in ("src/pkg/__init__.py", "tests/test_a.py", "docs/index.md", "train.py"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(CODE if rel == "train.py" else f"# {rel}\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")


# --------------------------------------------------------------------------- refused folders


def test_a_user_folder_given_as_cache_dir_is_refused_and_kept(cli, files, tmp_path):
    files({"t.py": CODE, "d/keep/sub/f": "x\n"})
    before = _tree(tmp_path / "d")
    run = cli("--cache-dir", "d", "t.py")
    assert run.exit_code == 2
    assert run.stderr.strip().splitlines() == [
        "amplint: error: cache directory d is not empty and is not an amplint cache; choose a new or empty folder"
    ]
    assert _tree(tmp_path / "d") == before


def test_cache_dir_dot_in_a_project_is_refused_and_writes_nothing(cli, tmp_path):
    _project(tmp_path)
    before = _tree(tmp_path)
    run = cli("--cache-dir", ".", "train.py")
    assert run.exit_code == 2
    assert "cache directory . is the project root" in run.stderr
    assert _tree(tmp_path) == before
    assert not (tmp_path / ".gitignore").exists() and not (tmp_path / "CACHEDIR.TAG").exists()


def test_a_committed_cache_symlink_to_the_parent_is_never_followed(cli, tmp_path, monkeypatch):
    outer = tmp_path / "outer"
    checkout = outer / "checkout"
    checkout.mkdir(parents=True)
    _project(checkout)
    (outer / "sibling" / "data").mkdir(parents=True)
    (outer / "sibling" / "data" / "weights.bin").write_bytes(b"\0" * 16)
    (checkout / ".amplint_cache").symlink_to("..")
    monkeypatch.chdir(checkout)
    before = _tree(outer)
    run = cli("train.py")  # no flag at all: the default cache folder
    assert run.exit_code == 2
    assert "is a symbolic link; amplint does not follow it" in run.stderr
    assert _tree(outer) == before


def test_home_and_a_folder_holding_a_linted_path_are_refused(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    with pytest.raises(CacheDirError, match="your home directory"):
        check_cache_root(home, project_root=home / "proj", linted=[home / "proj"])
    with pytest.raises(CacheDirError, match="contains the linted path"):
        check_cache_root(tmp_path, project_root=home / "proj", linted=[home / "proj" / "train.py"])
    with pytest.raises(CacheDirError, match="file-system root"):
        check_cache_root(Path("/"), project_root=home / "proj", linted=[])
    check_cache_root(home / "proj" / ".amplint_cache", project_root=home / "proj", linted=[home / "proj"])


def test_a_file_as_cache_dir_is_refused(tmp_path):
    (tmp_path / "f").write_text("mine\n")
    with pytest.raises(CacheDirError, match="is not a directory"):
        check_cache_root(tmp_path / "f", project_root=tmp_path / "p", linted=[])
    assert (tmp_path / "f").read_text() == "mine\n"


# --------------------------------------------------------------------------- what amplint writes


def test_gitignore_only_in_a_folder_amplint_created(cli, files, tmp_path):
    files({"t.py": CODE})
    (tmp_path / "empty").mkdir()
    assert cli("--cache-dir", "empty", "t.py").exit_code == 1
    assert not (tmp_path / "empty" / ".gitignore").exists()
    assert (tmp_path / "empty" / "CACHEDIR.TAG").is_file()  # claims the empty folder as a cache
    assert cli("--cache-dir", "empty", "t.py").exit_code == 1  # and it is accepted next time
    assert cli("--cache-dir", "fresh", "t.py").exit_code == 1
    assert (tmp_path / "fresh" / ".gitignore").read_text().splitlines()[-1] == "*"


# --------------------------------------------------------------------------- pruning


@pytest.fixture
def cache(tmp_path):
    cache = Cache(tmp_path / ".amplint_cache")
    cache.ensure()
    return cache


def test_prune_keeps_a_user_file_and_a_foreign_folder_in_the_cache_root(cache):
    root = cache.root
    (root / "notes.txt").write_text("mine\n")
    (root / "results").mkdir()
    (root / "results" / "run1.json").write_text("{}")
    # named like a version folder, but amplint's marker is missing: not ours
    (root / "0.1.0-aaaaaaaaaaaa").mkdir()
    (root / "0.1.0-aaaaaaaaaaaa" / f"{'a' * 64}.json").write_text("{}")
    before = _tree(root)
    cache.prune(force=True)
    after = _tree(root)
    assert {k: v for k, v in after.items() if not k.startswith(cache.dir.name)} == {
        k: v for k, v in before.items() if not k.startswith(cache.dir.name)
    }


def test_prune_removes_only_amplint_files_of_an_old_version(cache):
    old = cache.root / "0.1.0-bbbbbbbbbbbb"  # written by 0.1, whose folders carry .last-prune
    old.mkdir()
    (old / ".last-prune").write_text("")
    (old / f"{'b' * 64}.json").write_text("{}")
    cache.prune(force=True)
    assert not old.exists()
    mixed = cache.root / "0.1.0-cccccccccccc"
    mixed.mkdir()
    (mixed / ".amplint-cache").write_text("")
    (mixed / f"{'c' * 64}.json").write_text("{}")
    (mixed / "user.txt").write_text("mine\n")
    cache.prune(force=True)
    assert sorted(p.name for p in mixed.iterdir()) == ["user.txt"]


def test_prune_never_follows_a_symlinked_version_folder(cache, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / ".amplint-cache").write_text("")
    (outside / f"{'d' * 64}.json").write_text("{}")
    (outside / "precious.txt").write_text("mine\n")
    link = cache.root / "0.0.9-dddddddddddd"
    link.symlink_to(outside, target_is_directory=True)
    before = _tree(outside)
    cache.prune(force=True)
    assert link.is_symlink() and _tree(outside) == before


def test_a_symlinked_current_version_folder_is_neither_pruned_nor_written(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    stale = outside / f"{'e' * 64}.json"
    stale.write_text("{}")
    long_ago = time.time() - MAX_AGE_S - 3600
    os.utime(stale, (long_ago, long_ago))
    root = tmp_path / "cache"
    root.mkdir()
    (root / cache_version()).symlink_to(outside, target_is_directory=True)
    cache = Cache(root)
    with pytest.raises(CacheDirError):
        cache.ensure()
    assert cache.prune(force=True) == 0
    cache.put(CODE, "a.py", Settings(), FileResult("a.py"))
    assert sorted(p.name for p in outside.iterdir()) == [stale.name]


def test_a_symlinked_entry_is_not_followed(cache, tmp_path):
    target = tmp_path / "target.json"
    target.write_text("mine\n")
    link = cache.dir / f"{'f' * 64}.json"
    link.symlink_to(target)
    long_ago = time.time() - MAX_AGE_S - 3600
    os.utime(target, (long_ago, long_ago))
    cache.prune(force=True)
    assert target.read_text() == "mine\n"


# --------------------------------------------------------------------------- temporary files


def test_a_failed_cache_write_leaves_no_temporary_file(cache, monkeypatch):
    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    cache.put(CODE, "a.py", Settings(), FileResult("a.py"))
    assert sorted(p.name for p in cache.dir.iterdir()) == [".amplint-cache"]


def test_a_failed_fix_write_keeps_the_file_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    from amplint.fixwrite import WriteError, write_fix

    target = tmp_path / "train.py"
    target.write_text(CODE)
    # a file named like amplint's temporary file is never overwritten: mkstemp picks a new name
    lookalike = tmp_path / ".train.py.x.amplint-tmp"
    lookalike.write_text("mine\n")

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(WriteError, match="No space left on device"):
        write_fix(target, CODE.encode(), b"fixed\n")
    assert target.read_text() == CODE
    assert sorted(p.name for p in tmp_path.iterdir()) == [lookalike.name, "train.py"]
    assert lookalike.read_text() == "mine\n"


# --------------------------------------------------------------------------- bad entries


def _entry_path(cache):
    (entry,) = cache.dir.glob("*.json")  # the one file linted
    return entry


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: {**d, "findings": "x"},
        lambda d: {**d, "findings": [{**d["findings"][0], "location": {"row": "x", "column": 1}}]},
        lambda d: {**d, "findings": [{**d["findings"][0], "severity": "fatal"}]},
        lambda d: {**d, "findings": [{**d["findings"][0], "fix": {"applicability": "maybe", "message": "m", "edits": []}}]},
        lambda d: {**d, "errors": [{"filename": 1, "message": "m", "internal": False}]},
        lambda d: {**d, "skipped": "no"},
        lambda d: {**d, "key": "0" * 64},  # an entry stored under another key's name
        lambda d: [d],
    ],
    ids=["findings-not-a-list", "row-not-an-int", "unknown-severity", "unknown-applicability", "error-types",
         "skipped-not-bool", "foreign-key", "not-an-object"],
)
def test_a_malformed_entry_is_a_miss_and_is_recomputed(cli, files, tmp_path, mutate):
    import json

    files({"t.py": CODE})
    first = cli("t.py", "--output-format", "concise")
    cache = Cache(tmp_path / ".amplint_cache")
    path = _entry_path(cache)
    good = json.loads(path.read_text())
    path.write_text(json.dumps(mutate(good)))
    again = cli("t.py", "--output-format", "concise")
    assert (again.exit_code, again.stdout) == (first.exit_code, first.stdout)
    assert json.loads(path.read_text()) == good  # recomputed and rewritten


def test_a_truncated_entry_is_a_miss(cli, files, tmp_path):
    files({"t.py": CODE})
    first = cli("t.py", "--output-format", "concise")
    path = _entry_path(Cache(tmp_path / ".amplint_cache"))
    path.write_bytes(path.read_bytes()[:20])
    again = cli("t.py", "--output-format", "concise")
    assert (again.exit_code, again.stdout) == (first.exit_code, first.stdout)
