"""Which CUDA autocast region a call runs under, lexically or through a same-file helper."""

from __future__ import annotations

from textwrap import dedent

from amplint.amp import FileFacts

TRAINER = dedent("""\
    import torch
    import torch.nn.functional as F

    def compute_loss(model, x, y):
        return F.binary_cross_entropy(torch.sigmoid(model(x)), y)

    def fp32_loss(model, x, y):
        with torch.autocast("cuda", enabled=False):
            return F.binary_cross_entropy(torch.sigmoid(model(x).float()), y)

    def train_step(model, x, y):
        with torch.autocast("cuda", dtype=torch.float16):
            direct = F.binary_cross_entropy(torch.sigmoid(model(x)), y)
            helper = compute_loss(model, x, y)
            exempt = fp32_loss(model, x, y)
        with torch.autocast("cpu"):
            cpu = F.binary_cross_entropy(torch.sigmoid(model(x)), y)
        return direct + helper + exempt + cpu
""")


def test_cuda_autocast_reaching_sees_regions_and_helper_calls():
    facts = FileFacts.from_source(TRAINER)
    bce = facts.call_index.calls_to({"torch.nn.functional.binary_cross_entropy"})
    reaches = {facts.position(site.node).start.line: facts.autocast.cuda_autocast_reaching(site) for site in bce}
    helper = reaches[5]
    assert helper is not None and facts.position(helper.caller.node).start.line == 14
    assert facts.position(helper.region.node).start.line == 12
    assert reaches[9] is None  # the helper switches autocast off itself
    direct = reaches[13]
    assert direct is not None and direct.caller is None
    assert reaches[17] is None  # CPU autocast
