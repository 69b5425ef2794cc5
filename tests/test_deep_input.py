"""Valid but deeply nested or unusual input is linted, or skipped with one clear line: never an
internal error, a crash, or a syntax error that is not one."""

from __future__ import annotations

import subprocess
import sys

import pytest

from amplint import lint_source
from amplint.syntaxcheck import MAX_EXPRESSION_DEPTH

TAIL = "with torch.cuda.amp.autocast():\n    pass\n"


def _codes(code: str) -> list[str]:
    return [f.code for f in lint_source(code, "deep.py")]


def _run(tmp_path, name: str, code: str, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / name).write_text(code, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "amplint", "check", "--no-cache", "--output-format", "concise", *args, name],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )


DEEP = {
    "elifs": "import torch\nx = 1\nif x == 0:\n    pass\n" + "".join(f"elif x == {i}:\n    pass\n" for i in range(1, 1000)),
    "and-chain": "import torch\ny = " + " and ".join(["a"] * 1000) + "\n",
    "sum": "import torch\ny = " + " + ".join(["a"] * 500) + "\n",
    "nested-ifs": "import torch\n" + "".join("    " * i + f"if c{i}:\n" for i in range(90)) + "    " * 90 + "pass\n",
}


@pytest.mark.parametrize("name", DEEP)
def test_deep_but_valid_code_keeps_its_findings(name):
    assert _codes(DEEP[name] + TAIL) == ["AMP001"]


def test_a_ten_thousand_term_chain_does_not_crash_the_run(tmp_path):
    code = "import torch\ny = " + " and ".join(["a"] * 10_000) + "\n" + TAIL
    run = _run(tmp_path, "big.py", code)
    assert run.returncode == 1, run.stderr
    assert run.stdout.startswith("big.py:3:6: AMP001")


def test_an_expression_too_deep_for_the_parser_is_skipped_with_one_line(tmp_path):
    code = "import torch\ny = a" + ".b()" * MAX_EXPRESSION_DEPTH + "\n" + TAIL
    run = _run(tmp_path, "chain.py", code)
    errors = [line for line in run.stderr.splitlines() if line.startswith("amplint: error:")]
    assert errors == [
        f"amplint: error: chain.py: not linted: an expression is nested {2 * MAX_EXPRESSION_DEPTH + 1} levels deep, "
        f"more than amplint's parser handles in reasonable time ({MAX_EXPRESSION_DEPTH})"
    ]
    assert "internal error" not in run.stderr and "All checks passed" not in run.stdout + run.stderr
    assert run.returncode == 1  # like an unreadable file: reported, not an internal error


def test_deep_input_among_other_files_costs_only_itself(tmp_path):
    for index in range(30):
        (tmp_path / f"ok{index}.py").write_text("import torch\n" + TAIL, encoding="utf-8")
    (tmp_path / "deep.py").write_text(DEEP["elifs"] + TAIL, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "amplint", "check", "--no-cache", "--output-format", "concise", "-j", "2", "."],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 1, run.stderr
    assert len([line for line in run.stdout.splitlines() if " AMP001 " in line]) == 31


@pytest.mark.parametrize(
    "code",
    [
        "import torch\n\x0c\ndef f():\n    pass\n\x0c\n" + TAIL,  # form feeds between definitions
        "import torch\n# a comment \x0c with a form feed\ndef f():\n    return 1\n" + TAIL,
        "import torch\nS = 'a\x0bb'\ndef f():\n    return S\n" + TAIL,  # vertical tab in a string
        "import torch\nS = 'a\x1cb'\ndef f():\n    return S\n" + TAIL,
        "import torch\nS = 'a\u2028b'\ndef f():\n    return S\n" + TAIL,  # line separator in a string
    ],
    ids=["form-feed", "form-feed-comment", "vertical-tab", "file-separator", "line-separator"],
)
def test_line_separators_python_does_not_count_are_no_syntax_error(code):
    assert _codes(code) == ["AMP001"]


@pytest.mark.parametrize(
    "code, message",
    [
        ("import torch\n# a NUL \x00 here\n" + TAIL, "cannot contain null bytes"),
        ("import torch\n" + "".join("    " * i + "if x:\n" for i in range(101)) + "    " * 101 + "pass\n" + TAIL,
         "too many"),
        ("import torch\ny = " + "(" * 1000 + "1" + ")" * 1000 + "\n" + TAIL, "too many nested parentheses"),
    ],
    ids=["nul-in-comment", "101-indents", "1000-parentheses"],
)
def test_code_python_rejects_is_a_syntax_error_and_is_not_fixed(tmp_path, code, message):
    findings = lint_source(code, "bad.py")
    assert [f.code for f in findings] == ["AMP000"]
    assert message in findings[0].message
    path = tmp_path / "bad.py"
    path.write_bytes(code.encode())
    subprocess.run([sys.executable, "-m", "amplint", "check", "--no-cache", "--fix", "bad.py"], cwd=tmp_path,
                   capture_output=True, timeout=300)
    assert path.read_bytes() == code.encode()


@pytest.mark.parametrize("nesting", ["-" * 20_000 + "1", "lambda: " * 3_000 + "1"], ids=["unary-minus", "lambda"])
def test_nesting_python_itself_gives_up_on_is_not_handed_to_libcst(tmp_path, monkeypatch, nesting):
    # CPython's parser stops with MemoryError here at once; libcst's took minutes and over 20 GB
    # on the unary chain before it was told what Python had found.
    import libcst

    from amplint import engine
    from amplint.settings import Settings

    def must_not_parse(*args, **kwargs):
        raise AssertionError("libcst was asked to parse a text Python's parser gave up on")

    monkeypatch.setattr(libcst, "parse_module", must_not_parse)
    text = f"import torch\nx = {nesting}\nwith torch.cuda.amp.autocast():\n    pass\n"
    result = engine.lint_text(text, "deep.py", Settings())
    assert [error.message for error in result.errors] == [
        "deep.py: not linted: nested too deeply (Python's parser ran out of stack)"
    ]
    assert result.findings == []
