"""Whether an enabled GradScaler is at work around a call, in its function or a caller's."""

from __future__ import annotations

from textwrap import dedent

from amplint.amp import FileFacts

LOOP = dedent("""\
    import torch

    def clip(model):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)

    def train(model, optimizer, loader, use_amp):
        scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
        off = torch.amp.GradScaler("cuda", enabled=False)
        for x in loader:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.scale(model(x)).backward()
            clip(model)
            scaler.step(optimizer)
            scaler.update()

    def evaluate(model, optimizer, off, x):
        off = torch.amp.GradScaler("cuda", enabled=False)
        off.scale(model(x)).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
""")


def test_scaler_in_use_around_sees_the_step_after_and_the_caller():
    facts = FileFacts.from_source(LOOP)
    clips = facts.call_index.calls_to({"torch.nn.utils.clip_grad_norm_"})
    found = {facts.position(site.node).start.line: facts.scaler_presence.scaler_in_use_around(site) for site in clips}
    assert found == {4: "scaler", 10: "scaler", 19: None}
