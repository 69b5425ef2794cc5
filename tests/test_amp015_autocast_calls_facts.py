"""Facts added for AMP014-AMP018: ``FileFacts.autocast_calls``, ``AutocastRegion.device_node/dtype_node``,
plain aliases of the autocast class and ``FileFacts.call_site``."""

from __future__ import annotations


from amplint.amp import FileFacts


def _facts(code: str) -> FileFacts:
    return FileFacts.from_source(code)


CODE = '''
import functools
import torch
from torch.amp import autocast as ac
from torch.cuda.amp import autocast as old

alias = torch.autocast
ctx = functools.partial(torch.autocast, device_type=torch.device("cuda"), dtype=torch.float32)


@torch.autocast("cpu", dtype=torch.bfloat16)
def decorated(x):
    return x


def f(x):
    with ac(x.device.type):
        pass
    with old(True, torch.float16):
        pass
    with alias("cuda:0"):
        pass
    return torch.autocast(device_type="cuda", dtype=torch.float64)
'''


def test_autocast_calls_cover_every_spelling():
    facts = _facts(CODE)
    found = {facts.code(a.call).split("(")[0]: a for a in facts.autocast.autocast_calls}
    assert set(found) == {"functools.partial", "torch.autocast", "ac", "old", "alias"}
    partial = found["functools.partial"]
    assert partial.partial and partial.qualname == "torch.amp.autocast"
    assert facts.code(partial.region.device_node) == 'torch.device("cuda")'
    assert facts.code(partial.region.dtype_node) == "torch.float32"
    assert found["old"].qualname == "torch.cuda.amp.autocast"
    assert found["old"].region.device_node is None and found["old"].region.dtype == "float16"
    assert facts.code(found["ac"].region.device_node) == "x.device.type"
    assert found["alias"].region.device == "cuda"


def test_alias_with_region_and_call_site():
    facts = _facts(CODE)
    regions = [r for rs in facts.autocast.autocast_regions.values() for r in rs]
    assert any(r.device_node is not None and facts.code(r.device_node) == '"cuda:0"' for r in regions)
    call = next(a.call for a in facts.autocast.autocast_calls)
    assert facts.call_site(call).node is call


def test_reassigned_alias_is_not_an_autocast():
    facts = _facts("import torch\nac = torch.autocast\nac = other\nwith ac('cuda'):\n    pass\n")
    assert facts.autocast.autocast_calls == []
    assert facts.autocast.autocast_regions == {}
