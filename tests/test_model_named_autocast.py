"""Blocks only named like autocast: what the name can hold decides whether they are one."""

from textwrap import dedent

from amplint.amp import FileFacts

ENGINE = """\
from contextlib import suppress, nullcontext
from functools import partial
import torch

def train_one_epoch(model, loader, amp_autocast=suppress):
    for x in loader:
        with amp_autocast():
            loss = model(x)
"""


def _named(code: str) -> list[bool]:
    facts = FileFacts.from_source(dedent(code))
    return [r.may_be_autocast for rs in facts.autocast.autocast_regions.values() for r in rs if not r.resolved]


def test_a_parameter_counts_only_where_an_autocast_is_passed():
    assert _named(ENGINE) == [False]
    assert _named(ENGINE + "train_one_epoch(m, l, amp_autocast=suppress)\n") == [False]
    assert _named(ENGINE + "train_one_epoch(m, l, partial(torch.autocast, device_type='cuda'))\n") == [True]
    assert _named(ENGINE + "train_one_epoch(m, l, amp_autocast=torch.cuda.amp.autocast)\n") == [True]
    through_name = ENGINE + "def main(a):\n    ac = suppress\n    if a:\n        ac = partial(torch.autocast, 'cuda')\n    train_one_epoch(m, l, ac)\n"
    assert _named(through_name) == [True]
    # arguments hidden behind **kwargs: nothing shows an autocast
    assert _named(ENGINE + "train_one_epoch(m, l, **kw)\n") == [False]


def test_method_calls_skip_self():
    code = """\
        from functools import partial
        import torch
        class T:
            def step(self, x, amp_autocast):
                with amp_autocast():
                    return x
            def run(self):
                self.step(1, partial(torch.autocast, "cuda"))
        """
    assert _named(code) == [True]


def test_helpers_and_variables_that_only_hold_null_contexts():
    code = """\
        from contextlib import nullcontext
        class T:
            def __init__(self):
                self.autocast_ctx = nullcontext()
            def maybe_autocast(self):
                return nullcontext()
            def external_autocast(self):
                return self.trainer.autocast()
            def a(self):
                with self.maybe_autocast():
                    pass
                with self.autocast_ctx:
                    pass
                with self.external_autocast():
                    pass
                with accelerator.autocast():
                    pass
        """
    assert _named(code) == [False, False, True, True]
