"""Device evidence and TorchScript: when a device-less autocast check means CUDA, and what device is at hand."""

from __future__ import annotations

from textwrap import dedent

import libcst as cst

from amplint.amp import FileFacts
from amplint.amp.devices import cuda_proven_in

CUSTOM_OPS = dedent("""\
    import torch

    def cast_inputs(x, device_type):
        if x.is_cuda:
            return torch.is_autocast_enabled()
        return torch.is_autocast_enabled()

    def norm(x):
        with torch.autocast(device_type=x.device.type):
            return torch.is_autocast_enabled()

    def enabled(device):
        try:
            return torch.is_autocast_enabled(device)
        except TypeError:
            return torch.is_autocast_enabled()

    @torch.jit.script
    def scripted(x):
        return x
""")


def _facts(code: str = CUSTOM_OPS) -> FileFacts:
    return FileFacts.from_source(code)


def test_cuda_proven_by_tests():
    assert cuda_proven_in(cst.parse_expression("x.is_cuda and flag")) == "body"
    assert cuda_proven_in(cst.parse_expression("device.type != 'cuda'")) == "orelse"
    assert cuda_proven_in(cst.parse_expression("x.is_cuda or flag")) is None


def test_checks_and_their_evidence():
    facts = _facts()
    checks = facts.devices.autocast_state_checks
    assert [bool(site.node.args) for site in checks] == [False, False, False, True, False]
    assert [facts.devices.runs_on_cuda_evidently(site) for site in checks] == [True, False, False, False, False]
    assert [facts.devices.device_check_fallback(site) for site in checks] == [False, False, False, False, True]


def test_device_type_at_hand():
    facts = _facts()
    first, _, region, _, fallback = facts.devices.autocast_state_checks
    assert facts.devices.device_type_at_hand(first.ctx.scope) == ("parameter", None)
    how, node = facts.devices.device_type_at_hand(region.ctx.scope)
    assert how == "autocast" and facts.code(node) == "x.device.type"
    assert facts.devices.device_type_at_hand(fallback.ctx.scope) is None


def test_torchscript():
    facts = _facts()
    assert facts.torchscript.uses_torchscript
    assert [f.node.name.value for f in facts.functions if facts.torchscript.is_scripted(f)] == ["scripted"]
    assert not _facts("import torch\ntorch.is_autocast_enabled()\n").torchscript.uses_torchscript
