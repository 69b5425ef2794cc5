"""``# noqa`` suppression, through the engine with the real AMP001 and a multi-line test rule."""

from __future__ import annotations

import pytest

from amplint import lint_source

IMPORT = "import torch\n"


def codes(code: str) -> list[str]:
    return [f.code for f in lint_source(code, "t.py")]


@pytest.mark.parametrize(
    ("comment", "suppressed"),
    [
        ("", False),
        ("  # noqa", True),
        ("  #noqa", True),
        ("  # NOQA", True),
        ("  # noqa: AMP001", True),
        ("  # noqa:AMP001", True),
        ("  # noqa: amp001", True),  # codes are case-insensitive
        ("  # noqa: E501, AMP001", True),
        ("  # noqa: AMP003,AMP001", True),
        ("  # noqa: AMP003 AMP001", True),
        ("  # noqa: E501", False),  # another tool's code must not silence amplint
        ("  # noqa: AMP002", False),
        ("  # noqa: AMP00", False),  # a prefix is not a code
        ("  # type: ignore  # noqa: AMP001", True),
        ("  # some text", False),
    ],
)
def test_noqa_on_the_reported_line(comment, suppressed):
    code = IMPORT + f"scaler = torch.cuda.amp.GradScaler(){comment}\n"
    assert codes(code) == ([] if suppressed else ["AMP001"])


def test_noqa_on_another_line_does_not_suppress():
    code = IMPORT + "# noqa: AMP001\nscaler = torch.cuda.amp.GradScaler()\nx = 1  # noqa\n"
    assert codes(code) == ["AMP001"]


def test_noqa_suppresses_only_its_own_line():
    code = IMPORT + "a = torch.cuda.amp.GradScaler()  # noqa: AMP001\nb = torch.cuda.amp.GradScaler()\n"
    findings = lint_source(code, "t.py")
    assert [(f.code, f.location.row) for f in findings] == [("AMP001", 3)]


def test_multiline_finding_uses_its_first_line(fake_rules):
    first = "x = bad_call(  # noqa: AMP991\n    1,\n)\n"
    last = "x = bad_call(\n    1,\n)  # noqa: AMP991\n"
    assert codes(first) == []
    assert codes(last) == ["AMP991"]
    (finding,) = lint_source(last, "t.py")
    assert (finding.location.row, finding.end_location.row, finding.noqa_row) == (1, 3, 1)


def test_syntax_error_is_never_suppressed():
    code = IMPORT + "with torch.cuda.amp.autocast(:  # noqa\n    pass\n"
    assert codes(code) == ["AMP000"]
    code = IMPORT + "with torch.cuda.amp.autocast(:  # noqa: AMP000\n    pass\n"
    assert codes(code) == ["AMP000"]


def test_noqa_via_cli_exit_code(cli, files):
    files({"a.py": IMPORT + "s = torch.cuda.amp.GradScaler()  # noqa: AMP001\n"})
    run = cli("a.py")
    assert (run.exit_code, run.stdout, run.stderr) == (0, "All checks passed!\n", "")


AUTOCAST = "c = torch.cuda.amp.autocast()"


@pytest.mark.parametrize(
    "line",
    [
        'c = torch.cuda.amp.autocast(enabled="# noqa" != "")',
        f'{AUTOCAST}; x = "# noqa"  # noqa: AMP003',
        f"{AUTOCAST}; x = '#noqa: AMP001' + \"#\"",
        f'msg = f"{{c}} # noqa"; {AUTOCAST}',  # an f-string is one token: its "#" is text
    ],
)
def test_noqa_inside_a_string_suppresses_nothing(line):
    assert codes(IMPORT + line + "\n") == ["AMP001"]


@pytest.mark.parametrize(
    "line",
    [
        f'{AUTOCAST}; x = "# noqa: AMP003"  # noqa: AMP001',
        f's = "#"; c = torch.cuda.amp.autocast(enabled="# noqa: E501")  # noqa: AMP001',
        f'c = torch.cuda.amp.autocast(enabled=f"{{1}} # noqa: E501" != "")  # noqa: AMP001',
    ],
)
def test_the_comment_after_a_string_that_looks_like_a_directive_is_read(line):
    assert codes(IMPORT + line + "\n") == []


@pytest.mark.parametrize(
    "code",
    [
        # The row of the finding is where the string ends: what precedes the quotes is text.
        IMPORT + 'doc = """\n# noqa """; c = torch.cuda.amp.autocast()\n',
        IMPORT + 'msg = f"""\n{torch.cuda.amp.autocast()}  # noqa\n"""\n',
    ],
)
def test_noqa_in_a_multiline_string_suppresses_nothing(code):
    assert [(f.code, f.location.row) for f in lint_source(code, "t.py")] == [("AMP001", 3)]


def test_noqa_at_the_end_of_a_bracketed_line_is_a_comment():
    code = IMPORT + 'c = torch.cuda.amp.autocast("# noqa: E501",  # noqa: AMP001\n    enabled=True,\n)\n'
    assert codes(code) == []


@pytest.mark.parametrize("line_end", ["\n", "\r\n", "\r"])
def test_directives_are_read_on_their_rows_whatever_the_line_ends(line_end):
    rows = [
        "import torch",
        'c = torch.cuda.amp.autocast(enabled="# noqa" != "")',
        f'{AUTOCAST}; s = "# noqa: E501"  # noqa: AMP001',
        f'{AUTOCAST}; s = "# noqa: E501"  # noqa: AMP001',  # the last row, without a line end
    ]
    findings = lint_source(line_end.join(rows), "t.py")
    assert [(f.code, f.location.row) for f in findings] == [("AMP001", 2)]


@pytest.mark.parametrize(
    ("text", "rows"),
    [
        ('x = 1  # noqa: AMP001\ns = """\n# noqa\n', {1}),  # never-closed multi-line string
        ('x = 1  # noqa\ns = "abc  # noqa\ny = 2  # noqa\n', {1}),  # never-closed quote
        ("if x:  # noqa\n        a = 1\n    b = 2  # noqa\n", {1}),  # inconsistent dedent
    ],
)
def test_a_text_that_does_not_tokenize_keeps_the_directives_before_the_error(text, rows):
    from amplint.noqa import row_directives

    assert set(row_directives(text)) == rows
    assert codes(text) == ["AMP000"]
