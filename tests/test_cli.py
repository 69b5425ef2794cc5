"""The command line: routing, options, output formats end to end, summaries and exit codes."""

from __future__ import annotations

import json
import sys

import pytest

import amplint

BAD = "bad_call(1)\nrisky(2)\nnote_me()\n"
DEPRECATED = "import torch\n\nwith torch.cuda.amp.autocast():\n    pass\n"


# --------------------------------------------------------------------------- routing


def test_no_subcommand_behaves_as_check(cli, files, fake_rules):
    files({"a.py": BAD})
    plain = cli("a.py", "--output-format", "concise")
    explicit = cli("check", "a.py", "--output-format", "concise")
    assert (plain.exit_code, plain.stdout, plain.stderr) == (explicit.exit_code, explicit.stdout, explicit.stderr)
    assert plain.exit_code == 1
    assert "a.py:1:1: AMP991 [*] `bad_call` is not allowed" in plain.stdout


def test_bare_amplint_lints_current_directory(cli, files, fake_rules):
    files({"pkg/a.py": "bad_call()\n"})
    run = cli()
    assert run.exit_code == 1
    assert run.stdout.startswith("pkg/a.py:1:1: AMP991")


def test_option_first_routes_to_check_fix(cli, files, fake_rules, tmp_path):
    files({"a.py": "bad_call()\n"})
    run = cli("--fix")  # `amplint --fix` during a migration
    assert run.exit_code == 0, run
    assert (tmp_path / "a.py").read_text() == "good_call()\n"
    assert (run.stdout, run.stderr) == ("Found 1 error (1 fixed, 0 remaining).\n", "")


def test_version(cli):
    run = cli("--version")
    assert run.exit_code == 0
    assert run.stdout == f"amplint {amplint.__version__}\n"


def test_help_lists_commands_without_importing_runtime(amplint_exe):
    code = (
        "import sys\n"
        "from amplint.cli.main import main\n"
        "sys.argv = ['amplint', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('RUNTIME' if any(m.startswith('amplint.runtime') for m in sys.modules) else 'CLEAN')\n"
    )
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "check" in out and "rules" in out and "verify" in out
    assert out.rstrip().endswith("CLEAN")


# --------------------------------------------------------------------------- output formats


def test_full_format_snapshot(cli, files, fake_rules):
    files({"a.py": "x = 1\ny = bad_call(\n    1,\n)\nif x:\n\trisky(2)\n"})
    run = cli("a.py", "--no-cache")
    assert run.exit_code == 1
    assert run.stdout == (
        "a.py:2:5: AMP991 [*] `bad_call` is not allowed\n"
        "  |\n"
        "2 | y = bad_call(\n"
        "  |     ^^^^^^^^^ AMP991\n"
        "  |\n"
        "  = help: Replace with `good_call`\n"
        "\n"
        "a.py:6:2: AMP992 `risky` may change results\n"
        "  |\n"
        "6 | \trisky(2)\n"
        "  | \t^^^^^^^^ AMP992\n"
        "  |\n"
        "  = help: Replace with `careful` (unsafe fix: enable with --unsafe-fixes)\n"
        "\n"
        "Found 2 errors (1 fixable with --fix, 1 fixable with --fix --unsafe-fixes).\n"
    )
    assert run.stderr == ""


def test_full_format_no_fix_reason_and_unsafe_enabled(cli, files, fake_rules):
    files({"a.py": "note_me()\nrisky()\n"})
    run = cli("a.py", "--unsafe-fixes")
    assert "  = note: nothing to fix\n" in run.stdout
    assert "a.py:2:1: AMP992 [*] `risky` may change results" in run.stdout
    assert "  = help: Replace with `careful`\n" in run.stdout
    assert run.stdout.endswith("  = help: Replace with `careful`\n\nFound 2 errors (1 fixable with --fix).\n")
    assert run.stderr == ""


def test_text_is_an_alias_of_full(cli, files, fake_rules):
    files({"a.py": BAD})
    assert cli("a.py", "--output-format", "text").stdout == cli("a.py").stdout


def test_concise_format_snapshot(cli, files, fake_rules):
    files({"b.py": BAD, "a.py": "bad_call()\n"})
    run = cli("--output-format", "concise", ".")
    assert run.stdout == (
        "a.py:1:1: AMP991 [*] `bad_call` is not allowed\n"
        "b.py:1:1: AMP991 [*] `bad_call` is not allowed\n"
        "b.py:2:1: AMP992 `risky` may change results\n"
        "b.py:3:1: AMP993 a note, with a comma: and a colon\n"
        "Found 4 errors (2 fixable with --fix, 1 fixable with --fix --unsafe-fixes).\n"
    )
    assert run.stderr == ""


def test_json_format(cli, files, fake_rules, tmp_path):
    files({"a.py": "bad_call(1)\nnote_me()\n"})
    run = cli("--format", "json", "a.py")
    assert run.exit_code == 1
    assert run.stderr == ""  # machine formats: nothing but the document
    data = json.loads(run.stdout)
    assert data == [
        {
            "code": "AMP991",
            "name": "test-bad-call",
            "message": "`bad_call` is not allowed",
            "filename": str((tmp_path / "a.py").resolve()),
            "location": {"row": 1, "column": 1},
            "end_location": {"row": 1, "column": 12},
            "fix": {
                "applicability": "safe",
                "message": "Replace with `good_call`",
                "edits": [
                    # the smallest edit: "ba" -> "goo" (the rest, "d_call", is unchanged)
                    {"content": "goo", "location": {"row": 1, "column": 1}, "end_location": {"row": 1, "column": 3}}
                ],
            },
            "url": fake_rules["AMP991"].url(),
            "severity": "error",
            "noqa_row": 1,
            "cell": None,
        },
        {
            "code": "AMP993",
            "name": "test-info",
            "message": "a note, with a comma: and a colon",
            "filename": str((tmp_path / "a.py").resolve()),
            "location": {"row": 2, "column": 1},
            "end_location": {"row": 2, "column": 10},
            "fix": None,
            "url": fake_rules["AMP993"].url(),
            "severity": "info",
            "noqa_row": 2,
            "cell": None,
        },
    ]


def test_json_clean_is_empty_list(cli, files, fake_rules):
    files({"a.py": "good_call()\n"})
    run = cli("--output-format", "json", "a.py")
    assert (run.exit_code, run.stdout, run.stderr) == (0, "[]\n", "")


def test_github_format(cli, files, fake_rules):
    files({"dir,1/a:b.py": "note_me()\nbad_call()\n"})
    run = cli("--output-format", "github", ".")
    assert run.stdout == (
        "::notice file=dir%2C1/a%3Ab.py,line=1,col=1,endLine=1,endColumn=10,"
        "title=AMP993 (test-info)::a note, with a comma: and a colon\n"
        "::error file=dir%2C1/a%3Ab.py,line=2,col=1,endLine=2,endColumn=11,"
        "title=AMP991 (test-bad-call)::`bad_call` is not allowed\n"
    )
    assert run.stderr == ""


def test_sarif_format_end_to_end(cli, files, fake_rules):
    files({"sub dir/a.py": "bad_call()\n"})
    run = cli("--output-format", "sarif", ".")
    assert run.exit_code == 1 and run.stderr == ""
    sarif = json.loads(run.stdout)
    (result,) = sarif["runs"][0]["results"]
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "sub%20dir/a.py", "uriBaseId": "%SRCROOT%"}
    assert sarif["runs"][0]["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "AMP991"


def test_deprecated_api_end_to_end(cli, files, tmp_path):
    """The real AMP001 through the CLI: found, fixed, then clean."""
    files({"train.py": DEPRECATED})
    run = cli("train.py", "--output-format", "concise")
    assert run.exit_code == 1
    assert run.stdout.startswith("train.py:3:6: AMP001 [*] ")
    fixed = cli("train.py", "--fix")
    assert fixed.exit_code == 0, fixed
    assert "torch.amp.autocast(" in (tmp_path / "train.py").read_text()
    again = cli("train.py")
    assert (again.exit_code, again.stdout, again.stderr) == (0, "All checks passed!\n", "")


# --------------------------------------------------------------------------- summaries, quiet, exit codes


def test_all_checks_passed(cli, files, fake_rules):
    files({"a.py": "good_call()\n"})
    run = cli("a.py")
    assert (run.exit_code, run.stdout, run.stderr) == (0, "All checks passed!\n", "")


def test_exit_zero(cli, files, fake_rules):
    files({"a.py": BAD})
    run = cli("a.py", "--exit-zero", "--output-format", "concise")
    assert run.exit_code == 0
    assert run.stdout.count("\n") == 4  # three findings and the summary
    assert run.stdout.splitlines()[-1].startswith("Found 3 errors")


def test_quiet_prints_findings_only(cli, files, fake_rules):
    files({"a.py": "bad_call()\n", "empty/readme.txt": "x"})
    run = cli("a.py", "empty", "-q", "--output-format", "concise")
    assert run.stderr == ""
    assert run.stdout == "a.py:1:1: AMP991 [*] `bad_call` is not allowed\n"


def test_statistics_text(cli, files, fake_rules):
    files({"a.py": BAD + "bad_call()\nbad_call()\nrisky()\n"})
    run = cli("a.py", "--statistics")
    assert run.exit_code == 1
    assert run.stdout == (
        "3\tAMP991\t[*] test-bad-call\n"
        "2\tAMP992\t[ ] test-risky-call\n"
        "1\tAMP993\t[ ] test-info\n"
        "Found 6 errors (3 fixable with --fix, 2 fixable with --fix --unsafe-fixes).\n"
    )


def test_statistics_json(cli, files, fake_rules):
    files({"a.py": BAD})
    run = cli("a.py", "--statistics", "--output-format", "json", "--unsafe-fixes")
    assert json.loads(run.stdout) == [
        {"code": "AMP991", "name": "test-bad-call", "count": 1, "fixable": True},
        {"code": "AMP992", "name": "test-risky-call", "count": 1, "fixable": True},
        {"code": "AMP993", "name": "test-info", "count": 1, "fixable": False},
    ]


# --------------------------------------------------------------------------- fix, unsafe fixes, diff


def test_fix_safe_only_then_unsafe(cli, files, fake_rules, tmp_path):
    files({"a.py": "bad_call()\nrisky()\n"})
    run = cli("a.py", "--fix", "--output-format", "concise")
    assert run.exit_code == 1
    assert (tmp_path / "a.py").read_text() == "good_call()\nrisky()\n"
    assert run.stdout == "a.py:2:1: AMP992 `risky` may change results\nFound 2 errors (1 fixed, 1 remaining).\n"
    assert run.stderr == ""
    run = cli("a.py", "--fix", "--unsafe-fixes")
    assert (run.exit_code, run.stdout, run.stderr) == (0, "Found 1 error (1 fixed, 0 remaining).\n", "")
    assert (tmp_path / "a.py").read_text() == "good_call()\ncareful()\n"


def test_fix_keeps_crlf_and_mode(cli, files, fake_rules, tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(b"x = 1\r\nbad_call()\r\n")
    path.chmod(0o751)
    assert cli("a.py", "--fix").exit_code == 0
    assert path.read_bytes() == b"x = 1\r\ngood_call()\r\n"
    assert path.stat().st_mode & 0o777 == 0o751


def test_show_fixes(cli, files, fake_rules):
    files({"a.py": "bad_call()\nbad_call()\nrisky()\n"})
    run = cli("a.py", "--fix", "--show-fixes", "--output-format", "concise")
    assert run.stderr == (
        "Fixed:\n"
        "- a.py:\n"
        "    2 × AMP991 (test-bad-call)\n"
    )
    assert run.stdout.endswith("Found 3 errors (2 fixed, 1 remaining).\n")


def test_diff_writes_nothing(cli, files, fake_rules, tmp_path):
    files({"a.py": "x = 1\nbad_call()"})  # no newline at end of file
    run = cli("a.py", "--diff")
    assert run.exit_code == 1
    assert (tmp_path / "a.py").read_text() == "x = 1\nbad_call()"
    assert run.stdout == (
        "--- a.py\n"
        "+++ a.py\n"
        "@@ -1,2 +1,2 @@\n"
        " x = 1\n"
        "-bad_call()\n"
        "\\ No newline at end of file\n"
        "+good_call()\n"
        "\\ No newline at end of file\n"
    )
    assert run.stderr == "Would fix 1 error.\n"


def test_diff_without_changes_exits_zero(cli, files, fake_rules):
    files({"a.py": "note_me()\n"})
    run = cli("a.py", "--diff")
    assert (run.exit_code, run.stdout) == (0, "")
    assert run.stderr == "No errors would be fixed. 1 would remain.\n"


# --------------------------------------------------------------------------- rule selection


@pytest.mark.parametrize(
    ("args", "codes"),
    [
        ((), {"AMP991", "AMP992", "AMP993"}),
        (("--select", "AMP991"), {"AMP991"}),
        (("--select", "amp991,AMP993"), {"AMP991", "AMP993"}),
        (("--select", "AMP991", "--select", "AMP992"), {"AMP991", "AMP992"}),
        (("--ignore", "AMP99"), set()),
        (("--select", "AMP99", "--ignore", "AMP992"), {"AMP991", "AMP993", "AMP994"}),
        (("--select", "ALL", "--ignore", "AMP994,AMP001"), {"AMP991", "AMP992", "AMP993"}),
        (("--extend-select", "AMP994"), {"AMP991", "AMP992", "AMP993", "AMP994"}),
    ],
)
def test_selection(cli, files, fake_rules, args, codes):
    files({"a.py": BAD + "explode()\n"})
    run = cli("a.py", "--output-format", "json", "--no-cache", *args)
    found = {item["code"] for item in json.loads(run.stdout)}
    # AMP994 crashes: it shows up as an internal error, not a finding.
    assert found == codes - {"AMP994"}
    assert ("internal error in rule AMP994" in run.stderr) == ("AMP994" in codes)


@pytest.mark.parametrize("option", ["--select", "--ignore", "--extend-select"])
def test_unknown_selector_is_a_usage_error(cli, files, option):
    files({"a.py": "x = 1\n"})
    run = cli("a.py", option, "AMP9x")
    assert run.exit_code == 2
    assert run.stderr == f"amplint: error: {option}: unknown rule selector 'AMP9X'\n"


def test_bad_output_format_is_a_usage_error(cli, files):
    files({"a.py": "x = 1\n"})
    run = cli("a.py", "--output-format", "xml")
    assert run.exit_code == 2
    assert "Invalid value for '--output-format'" in run.stderr


def test_target_torch(cli, files):
    files({"a.py": "import torch\nscaler = torch.cuda.amp.GradScaler()\n"})
    new = cli("a.py", "--output-format", "json", "--no-cache")
    old = cli("a.py", "--output-format", "json", "--no-cache", "--target-torch", "2.2")
    (finding_new,), (finding_old,) = json.loads(new.stdout), json.loads(old.stdout)
    assert finding_new["fix"] is not None
    assert finding_old["fix"] is None  # torch.amp.GradScaler needs torch 2.3
    bad = cli("a.py", "--target-torch", "two")
    assert bad.exit_code == 2
    assert bad.stderr == "amplint: error: --target-torch: invalid torch version 'two' (expected e.g. 2.4)\n"


def test_syntax_errors_in_files_whose_amp_text_can_hold_no_finding(cli, files):
    # Its only AMP text is a disabled autocast: the gates rule every rule out from the logical
    # lines that spell it, and the file is not parsed whole, so its syntax error is not seen.
    files({"pkg/rotary.py": "import torch\n\n\ndef f(x):\n    with torch.autocast('cuda', enabled=False):\n"
                            "        return x.float()\n\n\ndef g(:\n"})
    assert cli("pkg", "--no-cache").exit_code == 0
    named = cli("pkg/rotary.py", "--no-cache", "--output-format", "concise")
    assert named.exit_code == 1
    assert "pkg/rotary.py:9:7: AMP000" in named.stdout
    assert cli("pkg", "--no-cache", "--no-prefilter").exit_code == 1


def test_syntax_errors_in_files_without_amp_text(cli, files):
    files({"pkg/a.py": "def f(:\n"})  # no AMP text: the prefilter skips it
    # Found by discovery: not parsed, so not reported (the price of skipping parses).
    assert cli("pkg").exit_code == 0
    # Named explicitly (as pre-commit does): still checked for syntax.
    named = cli("pkg/a.py", "--output-format", "concise")
    assert named.exit_code == 1
    assert "pkg/a.py:1:7: AMP000 SyntaxError: invalid syntax" in named.stdout
    run = cli("pkg", "--no-prefilter", "--output-format", "concise")
    assert run.exit_code == 1
    assert "AMP000" in run.stdout
    # What only Python's compiler rejects (the parser accepts it) is not a syntax error here,
    # exactly as in a file that is parsed.
    # So is what only the symbol table rejects (the quick check of a skipped file builds it).
    files({"pkg/b.py": "return 1\n", "pkg/c.py": "def f(a, a):\n    nonlocal b\n"})
    for name in ("pkg/b.py", "pkg/c.py"):
        assert cli(name).exit_code == 0
        assert cli(name, "--no-prefilter").exit_code == 0


@pytest.mark.parametrize("data", [
    "# café\ndef f(:\n".encode("utf-8"),
    "# -*- coding: latin-1 -*-\n# café\ndef f(:\n".encode("latin-1"),
])
def test_syntax_errors_in_non_ascii_files_without_amp_text(cli, files, data):
    # Text that is not ASCII is decoded before the prefilter looks at it; a file named
    # explicitly is still checked for syntax, in whatever encoding it declares.
    (files({"a.py": ""}) / "a.py").write_bytes(data)
    named = cli("a.py", "--output-format", "concise")
    assert named.exit_code == 1
    line = data.count(b"\n")
    assert named.stdout == f"a.py:{line}:7: AMP000 SyntaxError: invalid syntax\nFound 1 error.\n"
    piped = cli("-", "--stdin-filename", "a.py", "--output-format", "concise", input=data)
    assert piped.stdout == named.stdout


# --------------------------------------------------------------------------- stdin


def test_stdin_check(cli, fake_rules):
    run = cli("-", "--output-format", "concise", input="bad_call()\n")
    assert run.exit_code == 1
    assert run.stdout == "-:1:1: AMP991 [*] `bad_call` is not allowed\nFound 1 error (1 fixable with --fix).\n"


def test_stdin_filename_and_fix_to_stdout(cli, fake_rules, files):
    files({"pyproject.toml": '[tool.amplint.per-file-ignores]\n"legacy/*" = ["AMP993"]\n'})
    run = cli("-", "--stdin-filename", "legacy/x.py", "--fix", "--output-format", "concise",
              input="bad_call()\nrisky()\nnote_me()\n")
    assert run.exit_code == 1
    assert run.stdout == "good_call()\nrisky()\nnote_me()\n"  # only the code on stdout
    assert run.stderr == (
        "legacy/x.py:2:1: AMP992 `risky` may change results\n"
        "Found 2 errors (1 fixed, 1 remaining).\n"
    )


def test_stdin_fix_passes_clean_code_through(cli, fake_rules):
    run = cli("--fix", "-", input="x = 1\n")
    assert (run.exit_code, run.stdout) == (0, "x = 1\n")


def test_stdin_with_other_paths_is_an_error(cli, files):
    files({"a.py": ""})
    run = cli("-", "a.py")
    assert run.exit_code == 2
    assert run.stderr == "amplint: error: `-` (stdin) cannot be combined with other paths\n"


# --------------------------------------------------------------------------- parallel


def test_parallel_results_match_serial_and_keep_order(cli, files, fake_rules):
    files({f"m{i:02d}.py": "x = 1\n" * (i % 3) + "bad_call()\n" for i in range(40)})
    serial = cli(".", "-j", "1", "--no-cache", "--output-format", "concise")
    parallel = cli(".", "-j", "2", "--no-cache", "--output-format", "concise")
    assert serial.stdout == parallel.stdout
    assert serial.stdout.splitlines()[0].startswith("m00.py:1:1:")
    assert len(parallel.stdout.splitlines()) == 41  # and the summary
    assert parallel.stdout.splitlines()[-1] == "Found 40 errors (40 fixable with --fix)."


# --------------------------------------------------------------------------- rules / rule


def test_rules_table(cli, fake_rules):
    run = cli("rules")
    lines = run.stdout.splitlines()
    assert lines[0].split() == ["Code", "Name", "Fix", "Severity", "Default"]
    assert lines[1].split() == ["AMP000", "syntax-error", "no", "error", "on"]
    assert ["AMP001", "deprecated-amp-api", "sometimes", "(safe", "or", "unsafe)", "error", "on"] in [line.split() for line in lines]
    assert ["AMP020", "legacy-lightning-precision", "safe", "warning", "on"] in [line.split() for line in lines]
    assert lines[-4:] == [
        line for line in lines if line.startswith("AMP99")
    ]
    assert [line.split() for line in lines[-4:]] == [
        ["AMP991", "test-bad-call", "safe", "error", "on"],
        ["AMP992", "test-risky-call", "unsafe", "warning", "on"],
        ["AMP993", "test-info", "no", "info", "on"],
        ["AMP994", "test-explodes", "no", "error", "off"],
    ]


def test_rules_json(cli):
    from amplint.rules import all_rules

    rows = json.loads(cli("rules", "--output-format", "json").stdout)
    assert [row["code"] for row in rows] == ["AMP000", *all_rules()]
    assert set(rows[1]) == {
        "code", "name", "summary", "fixable", "fix_availability", "fix_withheld", "severity", "default", "url"
    }


def test_rule_docs(cli):
    from amplint.rules import all_rules

    run = cli("rule", "amp001")
    assert run.exit_code == 0
    lines = run.stdout.splitlines()
    assert lines[0] == "# deprecated-amp-api (AMP001)"
    assert lines[2].startswith(
        "Severity: error. Fix is sometimes available (safe when the rule can prove it, else unsafe; none when an imported name"
    )
    assert all_rules()["AMP001"].documentation() in run.stdout
    assert "## Why is this bad?" in run.stdout


def test_rule_unknown(cli):
    run = cli("rule", "AMP999")
    assert (run.exit_code, run.stdout) == (2, "")
    assert run.stderr == "amplint: error: unknown rule code 'AMP999' (see `amplint rules`)\n"


# --------------------------------------------------------------------------- verify registration


def test_verify_without_torch_is_one_line(cli, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    run = cli("verify", "train.py")
    assert run.exit_code == 2
    assert run.stderr == "amplint: error: amplint verify needs PyTorch: pip install 'amplint[runtime]'\n"


def test_verify_is_the_runtime_command(cli):
    run = cli("verify", "--help")
    assert run.exit_code == 0
    assert "--steps" in run.stdout


# --------------------------------------------------------------------------- import hygiene


def test_version_does_not_import_torch(amplint_exe, tmp_path):
    run = amplint_exe("--version", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert run.exit_code == 0
    imported = {line.split("|")[-1].strip() for line in run.stderr.splitlines() if "|" in line}
    assert "amplint.cli.main" in imported
    assert not any(name == "torch" or name.startswith("torch.") for name in imported)
    assert not any(name.startswith("amplint.rules") for name in imported)
    modules = _modules_after(["--version"], tmp_path)
    assert "torch" not in modules and "amplint.engine" not in modules and "libcst" not in modules


def _modules_after(args: list[str], cwd) -> set[str]:
    """Module names loaded after running ``amplint ARGS`` in a fresh interpreter.

    (``-X importtime`` does not list modules loaded through ``importlib.import_module``.)
    """
    import subprocess

    code = (
        "import sys\n"
        "from amplint.cli.main import main\n"
        f"sys.argv = ['amplint', *{args!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write('MODULES ' + ' '.join(sorted(sys.modules)) + '\\n')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=120)
    line = [line for line in proc.stderr.splitlines() if line.startswith("MODULES ")][-1]
    return set(line.split()[1:])


def test_check_imports_only_the_reporter_it_uses(files, tmp_path):
    files({"a.py": DEPRECATED})
    modules = _modules_after(["check", "a.py", "--no-cache", "--output-format", "concise"], tmp_path)
    assert "amplint.engine" in modules and "amplint.report.text" in modules
    for unused in ("amplint.report.json", "amplint.report.sarif", "amplint.report.github", "amplint.report.diff"):
        assert unused not in modules
    assert not any(name.startswith("amplint.runtime") for name in modules)
    assert not any(name == "torch" or name.startswith("torch.") for name in modules)
    sarif = _modules_after(["check", "a.py", "--no-cache", "--output-format", "sarif"], tmp_path)
    assert "amplint.report.sarif" in sarif and "amplint.report.text" not in sarif
