"""Each AMP001 finding describes its own rewrite, also when one import's names share one edit."""

from textwrap import dedent

from amplint.api import fix_source, lint_source

SOURCE = dedent("""\
    import torch
    from torch.cuda.amp import GradScaler, autocast, custom_bwd, custom_fwd

    scaler = GradScaler()


    class Fn(torch.autograd.Function):
        @staticmethod
        @custom_fwd
        def forward(ctx, x):
            return x

        @staticmethod
        @custom_bwd
        def backward(ctx, grad):
            return grad


    with autocast():
        pass
""")


def test_each_finding_names_its_own_replacement():
    findings = lint_source(SOURCE, settings={"select": ["AMP001"]})
    messages = {f.message.split("`")[1]: f.fix.message for f in findings if f.fix is not None}
    assert messages == {
        "torch.cuda.amp.GradScaler": "Rewrite to `torch.amp.GradScaler`",
        "torch.cuda.amp.custom_fwd": "Rewrite to `torch.amp.custom_fwd`",
        "torch.cuda.amp.custom_bwd": "Rewrite to `torch.amp.custom_bwd`",
        "torch.cuda.amp.autocast": "Rewrite to `torch.amp.autocast`",
    }


def test_the_shared_import_edit_is_applied_once():
    fixed = fix_source(SOURCE, settings={"select": ["AMP001"]})
    assert "from torch.amp import GradScaler, autocast, custom_bwd, custom_fwd\n" in fixed
    assert 'scaler = GradScaler("cuda")' in fixed
    assert '@custom_fwd(device_type="cuda")' in fixed
    assert lint_source(fixed, settings={"select": ["AMP001"]}) == []
