"""The result cache: keys, layout, atomic writes, pruning, and its use by the CLI."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

import amplint.engine as engine
import amplint.jobs as jobs
from amplint.cache import MAX_AGE_S, Cache, cache_version
from amplint.model import FileError, FileResult
from amplint.settings import Settings

CODE = "import torch\nwith torch.cuda.amp.autocast():\n    pass\n"
CLEAN = "import torch\nwith torch.amp.autocast('cuda'):\n    pass\n"  # parsed (has trigger text), no finding


@pytest.fixture
def cache(tmp_path):
    return Cache(tmp_path / ".amplint_cache")


def test_roundtrip_keeps_findings_fixes_and_source(cache):
    settings = Settings()
    result = engine.lint_text(CODE, "a.py", settings)
    assert result.findings and result.findings[0].fix is not None
    assert cache.get(CODE, "a.py", settings) is None
    cache.put(CODE, "a.py", settings, result)
    cached = cache.get(CODE, "a.py", settings)
    assert cached is not None
    assert [f.to_dict() for f in cached.findings] == [f.to_dict() for f in result.findings]
    assert cached.source == CODE  # the full reporter shows the source line
    assert cached.skipped is False and cached.errors == []


def test_skipped_and_errors_are_kept(cache):
    settings = Settings()
    result = FileResult("b.py", errors=[FileError("b.py", "b.py: something", internal=False)], skipped=True)
    cache.put("x = 1\n", "b.py", settings, result)
    cached = cache.get("x = 1\n", "b.py", settings)
    assert cached.skipped is True
    assert cached.errors == [FileError("b.py", "b.py: something", False)]
    assert cached.source is None


def test_key_depends_on_text_filename_settings_and_version(cache, monkeypatch):
    base = cache.key(CODE, "a.py", Settings())
    assert cache.key(CODE, "a.py", Settings()) == base
    assert cache.key(CODE + "\n", "a.py", Settings()) != base
    assert cache.key(CODE, "b.py", Settings()) != base
    assert cache.key(CODE, "a.py", Settings(ignore=("AMP001",))) != base
    assert cache.key(CODE, "a.py", Settings(target_torch=(2, 2))) != base
    monkeypatch.setattr("amplint.cache.cache_version", lambda: "9.9.9-test")
    assert cache.key(CODE, "a.py", Settings()) != base


def test_layout_gitignore_and_version_folder(cache):
    settings = Settings()
    cache.put(CODE, "a.py", settings, engine.lint_text(CODE, "a.py", settings))
    assert (cache.root / ".gitignore").read_text().splitlines()[-1] == "*"
    assert (cache.root / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    import amplint

    assert cache.dir.name == cache_version() and cache.dir.name.startswith(amplint.__version__ + "-")
    entries = list(cache.dir.glob("*.json"))
    assert len(entries) == 1
    json.loads(entries[0].read_text())  # one small JSON document per entry


def test_corrupt_or_truncated_entry_is_a_miss(cache):
    settings = Settings()
    cache.put(CODE, "a.py", settings, engine.lint_text(CODE, "a.py", settings))
    (entry,) = cache.dir.glob("*.json")
    entry.write_text('{"findings": [')
    assert cache.get(CODE, "a.py", settings) is None
    entry.write_text('{"other": 1}')
    assert cache.get(CODE, "a.py", settings) is None


def test_unwritable_cache_never_fails(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    cache = Cache(blocker / "cache")  # a path below a regular file cannot be created
    cache.put(CODE, "a.py", Settings(), FileResult("a.py"))
    assert cache.get(CODE, "a.py", Settings()) is None


def test_concurrent_writers_and_readers_never_see_partial_entries(cache):
    settings = Settings()
    result = engine.lint_text(CODE, "a.py", settings)
    errors: list[str] = []
    stop = time.monotonic() + 1.0

    def writer():
        while time.monotonic() < stop:
            cache.put(CODE, "a.py", settings, result)

    def reader():
        while time.monotonic() < stop:
            got = cache.get(CODE, "a.py", settings)
            if got is not None and len(got.findings) != len(result.findings):
                errors.append("partial entry")

    threads = [threading.Thread(target=writer) for _ in range(3)] + [threading.Thread(target=reader) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert [p.name for p in cache.dir.iterdir() if p.name.startswith(".tmp-")] == []


def test_prune_removes_old_entries_and_other_versions(cache):
    settings = Settings()
    cache.put(CODE, "old.py", settings, FileResult("old.py"))
    cache.put(CODE, "new.py", settings, FileResult("new.py"))
    old = cache.dir / f"{cache.key(CODE, 'old.py', settings)}.json"
    long_ago = time.time() - MAX_AGE_S - 3600
    os.utime(old, (long_ago, long_ago))
    other = cache.root / "0.0.1-0123456789ab"  # another build's folder, as it writes one
    other.mkdir()
    (other / ".amplint-cache").write_text("amplint cache 0.0.1-0123456789ab\n")
    (other / f"{'0' * 64}.json").write_text("{}")
    assert cache.prune() == 1
    assert not old.exists() and not other.exists()
    assert cache.get(CODE, "new.py", settings) is not None
    assert (cache.root / ".gitignore").exists()
    # At most once a day unless forced.
    os.utime(cache.dir / f"{cache.key(CODE, 'new.py', settings)}.json", (long_ago, long_ago))
    assert cache.prune() == 0
    assert cache.prune(force=True) == 1


def test_a_hit_refreshes_last_use(cache):
    settings = Settings()
    cache.put(CODE, "a.py", settings, FileResult("a.py"))
    entry = cache.dir / f"{cache.key(CODE, 'a.py', settings)}.json"
    long_ago = time.time() - 10 * 24 * 3600
    os.utime(entry, (long_ago, long_ago))
    cache.get(CODE, "a.py", settings)
    assert entry.stat().st_mtime > time.time() - 60


# --------------------------------------------------------------------------- through the CLI


def _count_lints(monkeypatch) -> list[str]:
    seen: list[str] = []
    real = engine.lint_text

    def counting(text, filename, *args, **kwargs):
        seen.append(filename)
        return real(text, filename, *args, **kwargs)

    monkeypatch.setattr(jobs, "lint_text", counting)  # the file-level runner's calls
    return seen


def test_second_run_is_served_from_cache(cli, files, tmp_path, monkeypatch):
    files({"a.py": CODE, "b.py": CLEAN, "c.py": "x = 1\n"})  # c.py: no trigger text, never parsed
    seen = _count_lints(monkeypatch)
    first = cli(".", "-j", "1")
    assert sorted(seen) == ["a.py", "b.py"]
    assert (tmp_path / ".amplint_cache" / ".gitignore").exists()
    seen.clear()
    second = cli(".", "-j", "1")
    assert seen == []
    assert (second.exit_code, second.stdout, second.stderr) == (first.exit_code, first.stdout, first.stderr)
    (tmp_path / "b.py").write_text(CLEAN + "y = 2\n")  # an edit misses
    cli(".", "-j", "1")
    assert seen == ["b.py"]
    seen.clear()
    cli(".", "-j", "1", "--ignore", "AMP001")  # a settings change misses
    assert sorted(seen) == ["a.py", "b.py"]


def test_no_cache_fix_and_diff_do_not_use_the_cache(cli, files, tmp_path, monkeypatch):
    files({"a.py": CODE})
    seen = _count_lints(monkeypatch)
    cli("a.py", "--no-cache")
    assert not (tmp_path / ".amplint_cache").exists()
    cli("a.py")
    seen.clear()
    cli("a.py", "--diff")
    assert seen == ["a.py"]
    cli("a.py", "--fix")
    assert seen == ["a.py", "a.py"]
    assert cli("a.py").exit_code == 0  # the fixed text is a new key: no stale finding


def test_cache_dir_option_and_env(cli, files, tmp_path, monkeypatch):
    files({"a.py": CODE})
    cli("a.py", "--cache-dir", "elsewhere")
    assert (tmp_path / "elsewhere" / ".gitignore").exists()
    monkeypatch.setenv("AMPLINT_CACHE_DIR", str(tmp_path / "fromenv"))
    from click.testing import CliRunner

    from amplint.cli.main import main_group

    CliRunner().invoke(main_group, ["a.py"])
    assert (tmp_path / "fromenv" / ".gitignore").exists()


def test_cache_lives_in_the_config_root(cli, files, tmp_path, monkeypatch):
    files({"proj/pyproject.toml": "[tool.amplint]\n", "proj/src/a.py": CODE})
    cli("proj/src")
    assert (tmp_path / "proj" / ".amplint_cache").is_dir()
    assert not (tmp_path / ".amplint_cache").exists()
