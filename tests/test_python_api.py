"""The Python API as a caller meets it: arguments checked with clear errors, syntax errors
reported, and a text it could not lint raised as ``NotLinted``, never returned as clean."""

from __future__ import annotations

import inspect
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import amplint
import amplint.api as amplint_api
from amplint.settings import Settings
from amplint.syntaxcheck import MAX_EXPRESSION_DEPTH

DEPRECATED = "import torch\n\nwith torch.cuda.amp.autocast():\n    pass\n"
CLIP = (
    "import torch\n"
    "scaler = torch.amp.GradScaler()\n"
    "for x in data:\n"
    "    scaler.scale(model(x)).backward()\n"
    "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
    "    scaler.step(opt)\n"
    "    scaler.update()\n"
)


def codes(findings):
    return [finding.code for finding in findings]


def test_settings_as_a_mapping_selects_rules():
    assert codes(amplint.lint_source(DEPRECATED, "t.py", {"select": ["AMP001"]})) == ["AMP001"]
    assert amplint.lint_source(DEPRECATED, "t.py", {"ignore": ["AMP001"]}) == []
    assert amplint.lint_source(DEPRECATED, "t.py", {"extend_select": ("AMP001",), "ignore": ["AMP0"]}) == []


def test_mapping_per_file_ignores_apply_to_the_path():
    settings = {"per-file-ignores": {"tests/*": ["AMP001"]}}
    assert amplint.lint_source(DEPRECATED, "tests/t.py", settings) == []
    assert codes(amplint.lint_source(DEPRECATED, "src/t.py", settings)) == ["AMP001"]


def test_fix_source_accepts_a_mapping():
    fixed = amplint.fix_source(DEPRECATED, "t.py", {"select": ["AMP001"]})
    assert 'torch.amp.autocast("cuda")' in fixed


def test_unknown_key_is_a_value_error_with_a_suggestion():
    with pytest.raises(ValueError, match=r"settings: unknown key 'selct' \(did you mean 'select'\?\)"):
        amplint.lint_source(DEPRECATED, "t.py", {"selct": ["AMP001"]})


def test_unknown_code_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match=r"settings.*unknown rule selector 'AMP999'"):
        amplint.lint_source(DEPRECATED, "t.py", {"select": ["AMP999"]})
    with pytest.raises(ValueError, match=r"settings: unknown rule selector 'AMP999'"):
        amplint.lint_source(DEPRECATED, "t.py", Settings(select=("AMP999",)))
    with pytest.raises(ValueError, match="AMP999"):
        amplint.fix_source(DEPRECATED, "t.py", Settings(ignore=("AMP999",)))


def test_a_bare_string_of_codes_is_a_type_error():
    # Read character by character, "AMP001" would select every rule starting with "A".
    with pytest.raises(TypeError, match=r"settings.select must be a tuple of rule codes"):
        amplint.lint_source(DEPRECATED, "t.py", Settings(select="AMP001"))
    with pytest.raises(ValueError, match=r"settings: 'select' must be a list of strings"):
        amplint.lint_source(DEPRECATED, "t.py", {"select": "AMP001"})


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: amplint.lint_source(b"x = 1\n"), "code must be a str"),
        (lambda: amplint.lint_source("x = 1\n", 3), "path must be a str or os.PathLike"),
        (lambda: amplint.lint_source("x = 1\n", "t.py", "AMP001"), "settings must be None"),
        (lambda: amplint.fix_source("x = 1\n", "t.py", None, "yes"), "unsafe must be a bool"),
    ],
)
def test_wrong_argument_types_are_type_errors_naming_the_argument(call, message):
    with pytest.raises(TypeError, match=message):
        call()


def test_discovery_keys_are_rejected_for_one_text():
    with pytest.raises(ValueError, match="'exclude' selects files"):
        amplint.lint_source(DEPRECATED, "t.py", {"exclude": ["build"]})


def test_path_like_is_accepted():
    assert codes(amplint.lint_source(DEPRECATED, Path("t.py"))) == ["AMP001"]


def test_syntax_error_is_reported_even_without_amp_text():
    (finding,) = amplint.lint_source("def (:\n", "t.py")
    assert finding.code == "AMP000"
    assert (finding.location.row, finding.location.column) == (1, 5)
    assert finding.message.startswith("SyntaxError")


def test_fix_source_leaves_broken_text_unchanged():
    assert amplint.fix_source("def (:\n") == "def (:\n"


def test_clean_text_has_no_findings():
    assert amplint.lint_source("x = 1\n") == []
    assert codes(amplint.lint_source(CLIP, "t.py")) == ["AMP003"]


def test_runtime_verify_shows_its_real_signature_without_importing_torch():
    probe = (
        "import inspect, sys\n"
        "import amplint.runtime\n"
        "parameters = inspect.signature(amplint.runtime.verify).parameters\n"
        "print(sorted(parameters)[:3], 'torch' in sys.modules)\n"
        "assert not [p for p in parameters.values() if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "['allow_no_amp', 'announce', 'args'] False"
    import amplint.runtime
    from amplint.runtime.api import verify

    assert inspect.signature(amplint.runtime.verify) == inspect.signature(verify)
    assert "FP32 reference" in (amplint.runtime.verify.__doc__ or "")


def test_unfixable_in_a_mapping_keeps_the_finding_and_drops_its_fix():
    code = "import torch\nwith torch.cuda.amp.autocast():\n    pass\n"
    findings = amplint.lint_source(code, settings={"select": ["AMP001"], "unfixable": ["AMP001"]})
    assert [f.code for f in findings] == ["AMP001"] and findings[0].fix is None
    assert amplint.fix_source(code, settings={"select": ["AMP001"], "unfixable": ["AMP001"]}) == code


@pytest.mark.parametrize("key", ["extend-include", "extension"])
def test_file_discovery_keys_are_refused_for_one_text(key):
    with pytest.raises(ValueError, match="selects files to lint"):
        amplint.lint_source("x = 1\n", settings={key: ["*.pyw"] if key == "extend-include" else {"pyw": "python"}})


# An expression deeper than libcst parses in reasonable time: ``amplint check`` says "not linted".
TOO_DEEP = "import torch\ny = a" + ".b()" * MAX_EXPRESSION_DEPTH + "\n" + DEPRECATED
TOO_DEEP_REASON = (
    f"deep.py: not linted: an expression is nested {2 * MAX_EXPRESSION_DEPTH + 1} levels deep, "
    f"more than amplint's parser handles in reasonable time ({MAX_EXPRESSION_DEPTH})"
)


@pytest.mark.parametrize(
    "call",
    [
        lambda path: amplint.lint_source(TOO_DEEP, path),
        lambda path: amplint.fix_source(TOO_DEEP, path),
        lambda path: amplint.fix_source(TOO_DEEP, path, {"select": ["AMP001"]}, unsafe=True),
        lambda path: amplint_api.lint_source(TOO_DEEP, path),
        lambda path: amplint_api.fix_source(TOO_DEEP, path),
    ],
    ids=["lint_source", "fix_source", "fix_source-unsafe", "api.lint_source", "api.fix_source"],
)
@pytest.mark.parametrize("path", ["deep.py", Path("deep.py")], ids=["str", "PathLike"])
def test_text_too_deep_to_lint_raises_not_linted_with_the_clis_reason(call, path):
    with pytest.raises(amplint.NotLinted) as caught:
        call(path)
    assert caught.value.reason == str(caught.value) == TOO_DEEP_REASON
    assert caught.value.filename == "deep.py"


def test_not_linted_reason_is_the_line_amplint_check_prints(tmp_path):
    (tmp_path / "deep.py").write_text(TOO_DEEP, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "amplint", "check", "--no-cache", "deep.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    with pytest.raises(amplint.NotLinted) as caught:
        amplint.lint_source(TOO_DEEP, "deep.py")
    assert f"amplint: error: {caught.value.reason}" in run.stderr.splitlines()


def test_a_recursion_error_while_linting_is_not_linted_as_on_the_command_line(monkeypatch):
    import amplint.engine

    def exhausted(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(amplint.engine, "lint_text", exhausted)
    with pytest.raises(amplint.NotLinted, match=r"^t\.py: too deeply nested to lint$"):
        amplint.lint_source(DEPRECATED, "t.py")


def test_not_linted_pickles_whole():
    error = pickle.loads(pickle.dumps(amplint.NotLinted("t.py: not linted: why", "t.py")))
    assert (error.reason, error.filename, str(error)) == ("t.py: not linted: why", "t.py", "t.py: not linted: why")
    assert not isinstance(error, ValueError)


def test_a_syntax_error_stays_a_finding_not_not_linted():
    broken = "import torch\ndef (:\n"
    assert codes(amplint.lint_source(broken, "t.py")) == ["AMP000"]
    assert amplint.fix_source(broken, "t.py") == broken


def test_deep_but_lintable_text_is_linted_as_before():
    deep = "import torch\ny = a" + ".b()" * (MAX_EXPRESSION_DEPTH // 4) + "\n" + DEPRECATED
    assert codes(amplint.lint_source(deep, "t.py")) == ["AMP001"]
    assert 'torch.amp.autocast("cuda")' in amplint.fix_source(deep, "t.py")


def test_not_linted_is_exported_without_loading_the_engine():
    probe = "import sys, amplint\nprint('NotLinted' in amplint.__all__, 'amplint.engine' in sys.modules)\n"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["True", "False"]
