"""AMP001 on compatibility shims: a guard and the code it guards are rewritten together or not
at all, and code that runs only where the new API is missing is left alone. Each case is the
exact text before and after ``--fix``."""

from __future__ import annotations

from textwrap import dedent

import pytest

from amplint.engine import lint_text
from amplint.settings import Settings


def fixed(source: str, target: tuple[int, int] | None = None) -> tuple[str, list]:
    settings = Settings(select=("AMP001",), target_torch=target)
    findings = lint_text(source, "shim.py", settings).findings
    result = lint_text(source, "shim.py", settings, fix=True)
    return (result.source if result.source is not None else source), findings


HASATTR_GUARD = dedent("""\
    import torch

    if hasattr(torch.cuda.amp, "custom_fwd"):
        fwd = torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)
        bwd = torch.cuda.amp.custom_fwd(cast_inputs=torch.float16)
    else:
        fwd = bwd = lambda f: f
""")


def test_a_hasattr_guard_is_rewritten_with_its_body():
    after, findings = fixed(HASATTR_GUARD)
    assert len(findings) == 2
    assert after == dedent("""\
        import torch

        if hasattr(torch.amp, "custom_fwd"):
            fwd = torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)
            bwd = torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float16)
        else:
            fwd = bwd = lambda f: f
    """)


def test_a_negated_guard_is_rewritten_with_the_branch_that_uses_the_name():
    source = dedent("""\
        import torch

        if not hasattr(torch.cpu.amp, "GradScaler"):
            scaler = None
        else:
            scaler = torch.cpu.amp.GradScaler(enabled=True)
    """)
    after, _ = fixed(source)
    assert after == dedent("""\
        import torch

        if not hasattr(torch.amp, "GradScaler"):
            scaler = None
        else:
            scaler = torch.amp.GradScaler("cpu", enabled=True)
    """)


def test_a_legacy_function_guard_asks_for_the_new_function():
    source = dedent("""\
        import torch

        def autocast_dtype():
            if hasattr(torch, "get_autocast_gpu_dtype"):
                return torch.get_autocast_gpu_dtype()
            return torch.float16
    """)
    after, _ = fixed(source)
    assert after == dedent("""\
        import torch

        def autocast_dtype():
            if hasattr(torch, "get_autocast_dtype"):
                return torch.get_autocast_dtype("cuda")
            return torch.float16
    """)


@pytest.mark.parametrize("target", [(2, 2), (2, 3)])
def test_below_the_new_apis_torch_neither_guard_nor_body_changes(target):
    after, findings = fixed(HASATTR_GUARD, target)
    assert after == HASATTR_GUARD
    assert len(findings) == 2 and all(f.fix is None for f in findings)
    assert "needs torch >= 2.4" in findings[0].no_fix_reason


def test_a_guard_over_a_use_that_cannot_be_rewritten_stays():
    source = dedent("""\
        import torch

        if hasattr(torch.cuda.amp, "custom_fwd"):
            custom_fwd = torch.cuda.amp.custom_fwd
        else:
            def custom_fwd(fn):
                return fn
    """)
    after, findings = fixed(source)
    assert after == source
    assert [f.fix for f in findings] == [None]


@pytest.mark.parametrize(
    "source",
    [
        # The body runs only where torch.amp has no GradScaler: torch.amp.GradScaler there would raise.
        """\
        import torch

        if not hasattr(torch.amp, "GradScaler"):
            scaler = torch.cuda.amp.GradScaler()
        """,
        """\
        import torch

        if hasattr(torch.amp, "custom_fwd"):
            pass
        else:
            custom_fwd = torch.cuda.amp.custom_fwd
        """,
        """\
        import torch

        def autocast_dtype():
            if not hasattr(torch, "get_autocast_dtype"):
                return torch.get_autocast_gpu_dtype()
            return torch.get_autocast_dtype("cuda")
        """,
        # Both arms already agree: the except arm is the old torch's, and rewriting it would
        # only make it a copy of the try.
        """\
        try:
            from torch.amp import GradScaler
        except ImportError:
            from torch.cuda.amp import GradScaler

        scaler = GradScaler()
        """,
    ],
    ids=["not-hasattr-new", "else-of-hasattr-new", "not-hasattr-new-function", "try-new-except-old"],
)
@pytest.mark.parametrize("target", [None, (2, 2)])
def test_code_that_runs_only_without_the_new_api_is_left_alone(source, target):
    source = dedent(source)
    after, findings = fixed(source, target)
    assert findings == [] and after == source


STAND_IN = dedent("""\
    try:
        from torch.cuda import amp
    except ImportError:
        amp = None

    def make(enabled):
        if amp is None:
            return None
        return amp.GradScaler(enabled=enabled)
""")


def test_a_try_import_with_a_none_stand_in_moves_with_its_uses():
    after, findings = fixed(STAND_IN)
    assert [f.location.row for f in findings] == [2]
    assert after == dedent("""\
        try:
            from torch import amp
        except ImportError:
            amp = None

        def make(enabled):
            if amp is None:
                return None
            return amp.GradScaler("cuda", enabled=enabled)
    """)


def test_a_from_import_of_two_names_with_stand_ins_moves_as_one():
    source = dedent("""\
        try:
            from torch.cuda.amp import autocast, GradScaler
        except ImportError:
            autocast = GradScaler = None

        def step(model, x):
            with autocast(True):
                y = model(x)
            return y, GradScaler(init_scale=1024)
    """)
    after, findings = fixed(source)
    assert len(findings) == 2
    assert after == dedent("""\
        try:
            from torch.amp import autocast, GradScaler
        except ImportError:
            autocast = GradScaler = None

        def step(model, x):
            with autocast("cuda", enabled=True):
                y = model(x)
            return y, GradScaler("cuda", init_scale=1024)
    """)


def test_a_stand_in_below_the_target_that_has_the_new_api_is_left_alone():
    after, findings = fixed(STAND_IN, (2, 2))
    assert after == STAND_IN and [f.fix for f in findings] == [None]


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("""\
        try:
            from torch.cuda.amp import GradScaler
        except ImportError:
            class GradScaler:
                def __init__(self, enabled=False):
                    pass

        scaler = GradScaler()
        """, "a stub class would receive the device as `enabled`"),
        ("""\
        try:
            from torch.cuda import amp
        except ImportError:
            amp = None

        state = amp.grad_scaler.OptState
        scaler = amp.GradScaler()
        """, "a use the rewrite does not know"),
        ("""\
        try:
            from torch.cuda import amp
        except ImportError:
            amp = None

        ctx = amp.autocast if amp else None
        """, "a use as a value"),
        ("""\
        try:
            from torch.cuda import amp
        except AttributeError:
            amp = None

        scaler = amp.GradScaler()
        """, "the stand-in is not for a failed import"),
        ("""\
        try:
            from torch.cuda import amp
        except ImportError:
            amp = None

        def build(helper):
            return helper(amp), amp.GradScaler()
        """, "the module handed on: a torch.amp there would need the device"),
    ],
    ids=["stub-class", "unknown-member", "value-use", "other-exception", "module-handed-on"],
)
def test_other_stand_ins_are_reported_without_a_fix(source, why):
    source = dedent(source)
    after, findings = fixed(source)
    assert after == source, why
    assert findings and all(f.fix is None for f in findings)
