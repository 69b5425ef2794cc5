"""Deprecated imports that no reported use points back to, annotations as uses, and fallbacks
recognised by what the other arm imports."""

from textwrap import dedent

from amplint.amp import FileFacts


def _facts(code: str) -> FileFacts:
    return FileFacts.from_source(dedent(code))


def _unreported(code: str) -> list[tuple[str, str, bool]]:
    return [(f.bound, f.qualname, f.rebinding_line is not None) for f in _facts(code).compat.unreported_deprecated_imports]


def test_unused_and_rebound_names_are_unreported_used_names_are_not():
    code = """\
        from torch.cuda.amp import autocast as autocast
        from torch.cuda import amp
        try:
            from torch.cuda.amp import GradScaler
        except ImportError:
            class GradScaler:
                pass
        from torch.cuda.amp import custom_fwd
        @custom_fwd
        def f(x):
            return x
        """
    assert _unreported(code) == [
        ("autocast", "torch.cuda.amp.autocast", False),
        ("amp", "torch.cuda.amp", False),
        ("GradScaler", "torch.cuda.amp.GradScaler", True),
    ]


def test_fallback_imports_and_plain_torch_imports_are_left_out():
    code = """\
        import torch.cuda.amp
        try:
            from torch.amp import GradScaler
        except ImportError:
            from torch.cuda.amp import GradScaler as CudaGradScaler
            GradScaler = CudaGradScaler
        if hasattr(torch, "autocast"):
            from torch import autocast
        else:
            from torch.cuda.amp import autocast
        """
    facts = _facts(code)
    assert facts.compat.unreported_deprecated_imports == []
    assert facts.compat.deprecated_api_uses == []


def test_version_gate_arm_is_the_main_path():
    code = """\
        if TORCH_VERSION >= (1, 6):
            from torch.cuda.amp import GradScaler
        else:
            GradScaler = None
        """
    assert _unreported(code) == [("GradScaler", "torch.cuda.amp.GradScaler", True)]


def test_annotations_are_references_in_the_defining_scope():
    code = """\
        from typing import Optional
        import torch
        from torch.cuda import amp
        class T:
            scaler: Optional[torch.cuda.amp.GradScaler] = None
            def f(self, s: torch.cuda.amp.grad_scaler.GradScaler) -> amp.GradScaler:
                torch = None
                return s
        """
    facts = _facts(code)
    uses = [(".".join(ref.parts), q, facts.compat.in_annotation(ref.node)) for ref, q in facts.compat.deprecated_api_uses]
    assert uses == [
        ("torch.cuda.amp.GradScaler", "torch.cuda.amp.GradScaler", True),
        ("torch.cuda.amp.grad_scaler.GradScaler", "torch.cuda.amp.GradScaler", True),
        ("amp.GradScaler", "torch.cuda.amp.GradScaler", True),
    ]
