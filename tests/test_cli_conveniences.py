"""ruff's conveniences, through the command line: --fix-only, --exit-non-zero-on-fix, --unfixable,
--extend-ignore, --isolated, --extension, --extend-include, --show-files, --show-settings, -v,
``rule --all``, ``version`` and ``clean`` (``--watch`` is in test_cli_watch.py)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

import amplint

BAD = "bad_call(1)\nrisky(2)\nnote_me()\n"


# --------------------------------------------------------------------------- fixing


def test_exit_non_zero_on_fix_fails_a_run_that_changed_files(cli, files, fake_rules, tmp_path):
    files({"a.py": "bad_call()\n"})
    assert cli("check", "--fix", "--no-cache", "a.py").exit_code == 0  # fixed, nothing left
    (tmp_path / "a.py").write_text("bad_call()\n")
    run = cli("check", "--fix", "--exit-non-zero-on-fix", "a.py")
    assert run.exit_code == 1, run
    assert (tmp_path / "a.py").read_text() == "good_call()\n"
    assert (run.stderr, run.stdout) == ("", "Found 1 error (1 fixed, 0 remaining).\n")
    # Nothing to fix the second time: exit 0 again.
    assert cli("check", "--fix", "--exit-non-zero-on-fix", "a.py").exit_code == 0
    # --exit-zero wins, as in ruff.
    (tmp_path / "a.py").write_text("bad_call()\n")
    assert cli("check", "--fix", "--exit-non-zero-on-fix", "--exit-zero", "a.py").exit_code == 0


def test_fix_only_fixes_and_reports_nothing_about_the_rest(cli, files, fake_rules, tmp_path):
    files({"a.py": BAD})
    run = cli("check", "--fix-only", "a.py")
    assert (run.exit_code, run.stdout, run.stderr) == (0, "Fixed 1 error.\n", "")
    assert (tmp_path / "a.py").read_text() == "good_call(1)\nrisky(2)\nnote_me()\n"
    # risky and note_me remain: a plain check still reports them.
    assert cli("check", "a.py", "--output-format", "concise").exit_code == 1
    again = cli("check", "--fix-only", "a.py")
    assert (again.exit_code, again.stdout, again.stderr) == (0, "No errors fixed.\n", "")
    (tmp_path / "a.py").write_text(BAD)
    assert cli("check", "--fix-only", "--exit-non-zero-on-fix", "a.py").exit_code == 1
    json_run = cli("check", "--fix-only", "--output-format", "json", "a.py")
    assert json.loads(json_run.stdout) == []


def test_unfixable_rules_are_neither_offered_nor_applied(cli, files, fake_rules, tmp_path):
    files({"a.py": "bad_call()\n"})
    offered = cli("check", "a.py", "--output-format", "concise", "--no-cache")
    assert "AMP991 [*]" in offered.stdout
    run = cli("check", "a.py", "--output-format", "concise", "--unfixable", "AMP991", "--no-cache")
    assert "AMP991 `bad_call`" in run.stdout and "[*]" not in run.stdout
    fixed = cli("check", "--fix", "--unfixable", "AMP99", "a.py")
    assert fixed.exit_code == 1
    assert (tmp_path / "a.py").read_text() == "bad_call()\n"
    # The configuration key does the same.
    files({"amplint.toml": 'unfixable = ["AMP991"]\n'})
    assert cli("check", "--fix", "a.py").exit_code == 1
    assert (tmp_path / "a.py").read_text() == "bad_call()\n"
    bad = cli("check", "a.py", "--unfixable", "NOPE1")
    assert bad.exit_code == 2 and "--unfixable: unknown rule selector 'NOPE1'" in bad.stderr


def test_extend_ignore_adds_to_ignore(cli, files, fake_rules):
    files({"a.py": BAD})
    run = cli("check", "a.py", "--output-format", "concise", "--no-cache", "--ignore", "AMP992", "--extend-ignore", "AMP993")
    assert [line.split()[1] for line in run.report.splitlines()] == ["AMP991"]
    files({"amplint.toml": 'ignore = ["AMP992"]\nextend-ignore = ["AMP991"]\n'})
    run = cli("check", "a.py", "--output-format", "concise", "--no-cache")
    assert [line.split()[1] for line in run.report.splitlines()] == ["AMP993"]


# --------------------------------------------------------------------------- configuration


def test_isolated_ignores_every_configuration_file(cli, files, fake_rules):
    files({"a.py": BAD, "amplint.toml": 'select = ["AMP992"]\n'})
    configured = cli("check", "a.py", "--output-format", "concise", "--no-cache")
    assert [line.split()[1] for line in configured.report.splitlines()] == ["AMP992"]
    isolated = cli("check", "a.py", "--output-format", "concise", "--no-cache", "--isolated")
    assert [line.split()[1] for line in isolated.report.splitlines()] == ["AMP991", "AMP992", "AMP993"]
    # Even a broken configuration is not read.
    files({"amplint.toml": "select = [\n"})
    assert cli("check", "a.py", "--no-cache").exit_code == 2
    assert cli("check", "a.py", "--no-cache", "--isolated").exit_code == 1
    both = cli("check", "a.py", "--isolated", "--config", "amplint.toml")
    assert both.exit_code == 2
    assert both.stderr == "amplint: error: --isolated ignores every configuration file and cannot be combined with --config\n"


def test_extension_maps_a_suffix_to_python_and_finds_it(cli, files, fake_rules):
    files({"src/tool.pyw": "bad_call()\n", "src/other.txt": "bad_call()\n"})
    unmapped = cli("check", "src", "--no-cache")
    assert unmapped.exit_code == 0 and "no Python files found in src" in unmapped.stderr
    run = cli("check", "src", "--no-cache", "--output-format", "concise", "--extension", "pyw:python")
    assert run.report == "src/tool.pyw:1:1: AMP991 [*] `bad_call` is not allowed\n"
    files({"amplint.toml": '[extension]\npyw = "python"\n'})
    assert cli("check", "src", "--no-cache", "--output-format", "concise").stdout == run.stdout


def test_extension_reads_a_suffix_as_a_notebook(cli, files, tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("# train"), nbformat.v4.new_code_cell(
        "import torch\nwith torch.cuda.amp.autocast():\n    pass")]
    (tmp_path / "train.nbjson").write_text(nbformat.writes(notebook))
    run = cli("check", ".", "--no-cache", "--output-format", "concise", "--extension", "nbjson:ipynb")
    assert run.exit_code == 1
    assert run.stdout.startswith("train.nbjson:cell 2:2:6: AMP001 [*]")


def test_extension_on_stdin_like_jupyterlab_lsp(cli):
    code = "import torch\nwith torch.cuda.amp.autocast():\n    pass\n"
    as_python = cli("check", "--stdin-filename", "Untitled.ipynb", "--extension", "ipynb:python",
                    "--output-format", "concise", "-", input=code)
    assert as_python.stdout.startswith("Untitled.ipynb:2:6: AMP001")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(code)]
    as_notebook = cli("check", "--stdin-filename", "Untitled.ipynb", "--output-format", "concise", "-",
                      input=nbformat.writes(notebook))
    assert as_notebook.stdout.startswith("Untitled.ipynb:cell 1:2:6: AMP001")


def test_bad_extension_values_are_one_line_errors(cli, files):
    files({"a.py": "x = 1\n"})
    for value, message in (
        ("pyw", "--extension: expected EXT:LANG such as pyw:python, got 'pyw'"),
        ("pyw:rust", "--extension: unknown language 'rust' for .pyw (expected one of: python, pyi, ipynb)"),
    ):
        run = cli("check", "a.py", "--extension", value)
        assert (run.exit_code, run.stderr) == (2, f"amplint: error: {message}\n")
    files({"amplint.toml": '[extension]\npyw = "rust"\n'})
    run = cli("check", "a.py")
    assert run.exit_code == 2 and "amplint.toml: 'extension': unknown language 'rust'" in run.stderr


def test_extend_include_adds_globs_by_name_and_by_path(cli, files, fake_rules):
    files({"a.pyw": "bad_call()\n", "scripts/run": "bad_call()\n", "other/run": "bad_call()\n"})
    run = cli("check", ".", "--no-cache", "--output-format", "concise", "--extend-include", "*.pyw", "--extend-include", "scripts/*")
    assert [line.split(":")[0] for line in run.report.splitlines()] == ["a.pyw", "scripts/run"]
    files({"amplint.toml": 'extend-include = ["*.pyw"]\n'})
    shown = cli("check", ".", "--show-files")
    assert shown.stdout.splitlines() == ["a.pyw"]
    files({"amplint.toml": 'extend-include = ["!x"]\n'})
    assert cli("check", ".").exit_code == 2


# --------------------------------------------------------------------------- showing


def test_show_files_lists_what_would_be_checked(cli, files, fake_rules):
    files({"b.py": "bad_call()\n", "a.py": "x = 1\n", "pkg/c.ipynb": "{}", "build/d.py": "", "notes.txt": ""})
    run = cli("check", "--show-files", "--extend-exclude", "b.py")
    assert (run.exit_code, run.stdout) == (0, "a.py\npkg/c.ipynb\n")
    missing = cli("check", "--show-files", "nope.py")
    assert missing.exit_code == 2 and "no such file or directory: nope.py" in missing.stderr


def test_show_settings_shows_the_first_files_settings(cli, files, tmp_path):
    files({"a.py": "x = 1\n", "pyproject.toml": '[tool.amplint]\nignore = ["AMP005"]\ntarget-torch = "2.2"\n\n'
           '[tool.amplint.per-file-ignores]\n"a.py" = ["AMP013"]\n'})
    run = cli("check", "--show-settings", "a.py", "--unfixable", "AMP001")
    assert run.exit_code == 0
    lines = run.report.splitlines()
    assert lines[0] == "Resolved settings for: a.py"
    assert lines[1] == f"Settings path: {tmp_path / 'pyproject.toml'}"
    enabled = lines[3].removeprefix("Enabled rules: ").split(", ")
    assert "AMP001" in enabled and "AMP005" not in enabled and "AMP013" not in enabled
    assert 'ignore = ["AMP005"]' in lines
    assert 'unfixable = ["AMP001"]' in lines
    assert 'target-torch = "2.2"  # from pyproject.toml' in lines
    assert 'per-file-ignores = {"a.py": ["AMP013"]}' in lines


def test_verbose_says_what_was_used(cli, files):
    files({"a.py": "x = 1\n", "amplint.toml": "select = [\"AMP001\"]\n"})
    run = cli("check", "-v", "--no-cache", "a.py")
    assert run.exit_code == 0
    lines = [line for line in run.stderr.splitlines() if line.startswith("amplint: verbose: ")]
    assert lines[0].endswith("amplint.toml; 1 rule enabled")
    assert lines[1].startswith("amplint: verbose: 1 file to check with ") and lines[1].endswith("cache: off")
    assert lines[2].startswith("amplint: verbose: checked in ")
    quiet = cli("check", "a.py")
    assert (quiet.stdout, quiet.stderr) == ("All checks passed!\n", "")  # nothing of it without -v
    both = cli("check", "-v", "-q", "a.py")
    assert both.exit_code == 2 and "--quiet and --verbose cannot be combined" in both.stderr


# --------------------------------------------------------------------------- rule, version


def test_rule_all_prints_every_rules_page(cli):
    from amplint.report.ruledoc import all_rule_rows

    run = cli("rule", "--all")
    assert run.exit_code == 0
    for row in all_rule_rows():
        assert f"# {row['name']} ({row['code']})\n" in run.stdout
    assert run.stdout.startswith(cli("rule", "AMP000").stdout)


def test_rule_json_carries_metadata_and_explanation(cli):
    one = json.loads(cli("rule", "AMP003", "--output-format", "json").stdout)
    assert one["code"] == "AMP003" and one["name"] == "clip-before-unscale"
    assert one["explanation"] == cli("rule", "AMP003").stdout
    every = json.loads(cli("rule", "--all", "--output-format", "json").stdout)
    assert [item["code"] for item in every] == [item["code"] for item in json.loads(cli("rules", "--output-format", "json").stdout)]
    for args in ((), ("AMP003", "--all")):
        run = cli("rule", *args)
        assert (run.exit_code, run.stderr) == (2, "amplint: error: give one rule CODE or --all (see `amplint rules`)\n")


def test_version_command(cli):
    assert cli("version").report == f"amplint {amplint.__version__}\n"
    data = json.loads(cli("version", "--output-format", "json").stdout)
    assert data["version"] == amplint.__version__ and data["python"].count(".") == 2


# --------------------------------------------------------------------------- clean


def _make_cache(cli, files, where: str = ".") -> Path:
    files({f"{where}/a.py": "import torch\nwith torch.cuda.amp.autocast():\n    pass\n", f"{where}/.git/HEAD": ""})
    cli("check", where)
    return Path(where) / ".amplint_cache"


def test_clean_removes_the_cache_a_check_made(cli, files, tmp_path):
    cache = tmp_path / _make_cache(cli, files)
    assert (cache / "CACHEDIR.TAG").is_file() and any(cache.glob("*/*.json"))
    run = cli("clean")
    assert run.exit_code == 0
    assert not cache.exists()
    assert run.stderr == "Removed 1 cache folder: .amplint_cache.\n"
    assert (tmp_path / "a.py").exists()
    assert cli("clean").stderr == "Removed 0 cache folders.\n"


def test_clean_finds_caches_in_subprojects(cli, files, tmp_path):
    one = tmp_path / _make_cache(cli, files, "one")
    (tmp_path / "two").mkdir()
    cli("check", "--cache-dir", "two/.amplint_cache", "one/a.py")
    assert one.exists() and (tmp_path / "two/.amplint_cache/CACHEDIR.TAG").exists()
    run = cli("clean")
    assert run.exit_code == 0
    assert not one.exists() and not (tmp_path / "two/.amplint_cache").exists()


def test_clean_leaves_what_is_not_amplints(cli, files, tmp_path):
    cache = tmp_path / _make_cache(cli, files)
    (cache / "notes.txt").write_text("mine")
    version = next(p for p in cache.iterdir() if p.is_dir())
    (version / "keep.dat").write_text("mine too")
    run = cli("clean")
    assert run.exit_code == 0
    assert (cache / "notes.txt").read_text() == "mine" and (version / "keep.dat").read_text() == "mine too"
    assert not list(version.glob("*.json"))  # amplint's own entries went
    assert (cache / "CACHEDIR.TAG").exists() and (cache / ".gitignore").exists()  # still a recognised cache, still hidden from git
    assert "Kept .amplint_cache: it holds files amplint did not write" in run.stderr


def test_clean_refuses_a_folder_that_is_not_a_cache_or_is_a_link(cli, files, tmp_path):
    files({"data/model.pt": "weights"})
    run = cli("clean", "--cache-dir", "data")
    assert run.exit_code == 2
    assert "data: not an amplint cache (no CACHEDIR.TAG written by amplint); nothing removed" in run.stderr
    assert (tmp_path / "data/model.pt").read_text() == "weights"
    # A folder merely named like the cache, without amplint's tag, is not touched either.
    files({"sub/.amplint_cache/x.json": "{}"})
    assert cli("clean").exit_code == 0
    assert (tmp_path / "sub/.amplint_cache/x.json").exists()
    cache = tmp_path / _make_cache(cli, files, "proj")
    (tmp_path / "link").symlink_to(cache)
    linked = cli("clean", "--cache-dir", "link", "sub")
    assert linked.exit_code == 2 and "link: a symbolic link; amplint does not follow it" in linked.stderr
    assert cache.exists()
