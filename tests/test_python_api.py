"""The Python API as a caller meets it: arguments checked with clear errors, syntax errors reported."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import amplint
from amplint.settings import Settings

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
    assert run.stdout.strip() == "['announce', 'args', 'baseline'] False"
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
