"""Which dtypes an autocast region may run in: literals, choices, dict lookups, command-line choices,
and autocasts chosen from a dict or a condition."""

from textwrap import dedent

from amplint.amp import FileFacts


def _regions(code: str):
    facts = FileFacts.from_source(dedent(code))
    return [r for rs in facts.autocast.autocast_regions.values() for r in rs]


def _dtypes(code: str):
    return [r.dtypes for r in _regions(code)]


def test_literal_default_and_unknown_dtypes():
    assert _dtypes("import torch\nwith torch.autocast('cuda'):\n    pass\n") == [{"float16"}]
    assert _dtypes("import torch\nwith torch.autocast('cpu'):\n    pass\n") == [{"bfloat16"}]
    # a dtype handed in from elsewhere is unknown, not the device default
    code = "import torch\ndef f(ptdtype):\n    with torch.autocast('cuda', dtype=ptdtype):\n        pass\n"
    assert _dtypes(code) == [None]
    code = "import torch\ndef f(ptdtype=torch.bfloat16):\n    with torch.autocast('cuda', dtype=ptdtype):\n        pass\nf()\n"
    assert _dtypes(code) == [{"bfloat16"}]


def test_choices_and_tables():
    code = """\
        import torch
        dt = torch.bfloat16 if bf16 else torch.float32
        with torch.autocast('cuda', dtype=dt):
            pass
        """
    assert _dtypes(code) == [{"bfloat16", "float32"}]
    code = """\
        import torch
        dtype = "bfloat16" if ok else "float16"
        ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
        with torch.autocast('cuda', dtype=ptdtype):
            pass
        """
    assert _dtypes(code) == [{"bfloat16", "float16"}]


def test_command_line_choices_narrow_a_table():
    code = """\
        import argparse, torch
        DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
        parser = argparse.ArgumentParser()
        parser.add_argument("--mixed-precision", choices=["fp32", "bf16"])
        args = parser.parse_args()
        with torch.autocast('cuda', dtype=DTYPES[args.mixed_precision]):
            pass
        with torch.autocast('cuda', dtype=DTYPES[args.other]):
            pass
        """
    assert _dtypes(code) == [{"float32", "bfloat16"}, {"float32", "bfloat16", "float16"}]


def test_an_autocast_chosen_from_a_dict_or_condition_is_a_region_of_every_choice():
    code = """\
        import torch
        from contextlib import nullcontext
        with {"fp16": torch.autocast("cuda", dtype=torch.float16),
              "bf16": torch.autocast("cuda", dtype=torch.bfloat16), "fp32": nullcontext()}[args.mp]:
            pass
        ctx = nullcontext() if cpu else torch.autocast("cuda", dtype=torch.bfloat16)
        with ctx:
            pass
        with torch.autocast("cuda", dtype=torch.bfloat16) if bf16 else make_context():
            pass
        """
    regions = _regions(code)
    assert [(r.dtypes, r.conditional, r.choices_known) for r in regions] == [
        ({"float16", "bfloat16"}, True, True),
        ({"bfloat16"}, True, True),
        ({"bfloat16"}, True, False),
    ]


def test_a_name_assigned_two_autocasts_holds_both():
    code = """\
        import torch
        ctx = torch.autocast("cuda", dtype=torch.bfloat16)
        if fp16:
            ctx = torch.autocast("cuda", dtype=torch.float16)
        with ctx:
            pass
        """
    assert _dtypes(code) == [{"bfloat16", "float16"}]
