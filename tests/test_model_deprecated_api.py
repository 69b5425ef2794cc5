"""The deprecated AMP API as the model sees it, and the import rewriter that moves it to torch.amp."""

from __future__ import annotations

from textwrap import dedent

import libcst as cst

from amplint.amp import FileFacts
from amplint.amp.compat import DEPRECATED_API, torch_amp_location
from amplint.fix.imports import rewrite_group, rewrite_import

TRAINER = dedent("""\
    import torch
    from torch.cuda.amp import autocast, GradScaler
    from torch.cuda import amp

    try:
        from torch.amp import custom_fwd
    except ImportError:
        from torch.cuda.amp import custom_fwd

    scaler = GradScaler(enabled=True)
    dtype = torch.get_autocast_gpu_dtype()

    def train_step(model, x):
        with autocast(dtype=torch.float16):
            loss = model(x)
        with amp.autocast():
            other = amp.common_helper(x)
        return loss + other
""")


def _lines(facts, nodes):
    return [facts.position(node).start.line for node in nodes]


def test_deprecated_api_uses_leave_out_compat_fallbacks():
    facts = FileFacts.from_source(TRAINER)
    uses = facts.compat.deprecated_api_uses
    assert [(facts.position(ref.node).start.line, qualname) for ref, qualname in uses] == [
        (10, "torch.cuda.amp.GradScaler"),
        (11, "torch.get_autocast_gpu_dtype"),
        (14, "torch.cuda.amp.autocast"),
        (16, "torch.cuda.amp.autocast"),
    ]
    assert DEPRECATED_API["torch.get_autocast_gpu_dtype"].spelling == 'torch.get_autocast_dtype("cuda")'
    assert DEPRECATED_API["torch.cuda.amp.custom_fwd"].spelling == 'torch.amp.custom_fwd(device_type="cuda")'


def test_torch_amp_location_follows_submodules_and_modules():
    assert torch_amp_location("torch.cuda.amp.autocast_mode.autocast") == "torch.amp.autocast"
    assert torch_amp_location("torch.cuda.amp") == "torch.amp"
    assert torch_amp_location("torch.cuda.amp.common") is None
    assert torch_amp_location("torch.get_autocast_gpu_dtype") is None


def test_references_through_an_import_include_the_uses_that_are_not_deprecated():
    facts = FileFacts.from_source(TRAINER)
    record = next(r for r in facts.imports if any(name == "amp" for _, name, _ in r.aliases))
    assert _lines(facts, (ref.node for ref in facts.import_uses.references_through(record))) == [16, 17]


def test_rewrite_import_repoints_a_whole_from_statement():
    facts = FileFacts.from_source(TRAINER)
    ref = next(ref for ref, _ in facts.compat.deprecated_api_uses if ref.parts[0] == "GradScaler")
    key, record = rewrite_group(facts, ref)
    assert key.startswith("importstmt:") and record is not None
    rewrite = rewrite_import(record, "GradScaler", torch_amp_location)
    assert rewrite.blocked is None
    (new,) = rewrite.changes.values()
    assert cst.Module([]).code_for_node(new) == "from torch.amp import autocast, GradScaler"
    torch_ref = next(ref for ref, _ in facts.compat.deprecated_api_uses if ref.parts[0] == "torch")
    assert rewrite_group(facts, torch_ref)[1] is None  # spelled through torch: only the call changes


def test_rewrite_import_refuses_a_statement_that_also_imports_names_that_stay():
    facts = FileFacts.from_source("from torch.cuda.amp import autocast, common\nwith autocast():\n    pass\n")
    rewrite = rewrite_import(facts.imports[0], "autocast", torch_amp_location)
    assert rewrite.changes == {}
    assert rewrite.blocked == "`from torch.cuda.amp import ...` also imports other names: split the import by hand"


def test_version_gates_are_told_from_device_and_precision_dispatch():
    from amplint.amp.version_gates import is_version_gate

    facts = FileFacts.from_source(dedent("""\
        import torch
        from packaging import version
        from helpers import is_torch_version, _TORCH_GREATER_EQUAL_2_4

        NEW = hasattr(torch.amp, "GradScaler")
        OLD = version.parse(torch.__version__) < version.parse("2.4")
        try:
            from torch.amp import GradScaler
            UNIFIED = True
        except ImportError:
            UNIFIED = False
        ON_GPU = torch.cuda.is_available()

        if NEW: pass
        if OLD: pass
        if UNIFIED: pass
        if _TORCH_GREATER_EQUAL_2_4: pass
        if device == "cuda" and is_torch_version(">=", "2.3"): pass
        if hasattr(torch.cuda.amp, "custom_fwd"): pass
        if ON_GPU: pass
        if device == "cpu": pass
        if torch.cuda.is_available(): pass
        if precision == "16-mixed": pass
        if hasattr(model, "module"): pass
        if x.device.type == "mps" and torch.is_autocast_enabled("mps"): pass
    """))
    tests = [(statement.test, ctx) for statement, ctx in facts.records.if_statements]
    verdicts = [is_version_gate(facts, test, ctx.scope) for test, ctx in tests]
    assert verdicts == [True] * 6 + [False] * 6
