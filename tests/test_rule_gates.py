"""The prefilter's second stage (amplint.rule_gates): a gate answers "cannot report" only where the
rule indeed reports nothing, and a file left with no rule to run is not parsed with libcst."""

from __future__ import annotations

import ast
from textwrap import dedent

import pytest

from amplint.engine import lint_text
from amplint.rule_gates import GATES, TreeEvidence, codes_that_may_report, codes_that_may_report_from_text, indexed_device_text
from amplint.rules.catalog import all_rules
from amplint.settings import Settings

ON = Settings(select=("ALL",), prefilter=True)
OFF = Settings(select=("ALL",), prefilter=False)


def _findings(text: str, settings: Settings) -> list[tuple]:
    return [(f.code, f.location.row, f.location.column, f.message) for f in lint_text(text, "t.py", settings, edits=False).findings]


AUTOCAST_RULES = {"AMP002", "AMP005", "AMP013", "AMP015", "AMP016", "AMP018"}


def _gated_away(text: str) -> set[str]:
    tree = ast.parse(text)
    whole = set(GATES) - codes_that_may_report(frozenset(GATES), tree)
    # With the source, the walk skips the statements that hold no word a flag needs: same verdicts.
    assert set(GATES) - codes_that_may_report(frozenset(GATES), tree, text=text) == whole
    # Asked of the logical lines cut from the text, unparsed: the same verdicts, where it answers
    # (AMP022's gate reads where statements are: with it, it answers only where AMP022's
    # line-local flags already rule it out).
    for cut in (frozenset(GATES) - {"AMP022"}, frozenset(GATES)):
        from_text = codes_that_may_report_from_text(cut, text)
        assert from_text is None or cut - from_text == whole & cut
    return whole


def _examples(code: str) -> list[str]:
    rule = all_rules()[code]
    return [example if isinstance(example, str) else example.code for example in rule.invalid]


@pytest.mark.parametrize("code", sorted(GATES))
def test_every_documented_finding_of_a_gated_rule_passes_its_gate(code):
    examples = _examples(code)
    assert examples
    for source in examples:
        assert code not in _gated_away(source), source


DISABLED_ONLY = dedent("""\
    import torch
    from .utils import maybe_autocast


    class Rotary(torch.nn.Module):
        def forward(self, x, position_ids):
            device_type = x.device.type if x.device.type != "mps" else "cpu"
            with torch.autocast(device_type=device_type, enabled=False):
                freqs = x.float() @ position_ids.float()
            with maybe_autocast(device_type=device_type, enabled=False):
                freqs = freqs.cos()
            return freqs.half()
""")


def test_a_file_whose_only_autocasts_are_disabled_is_not_parsed():
    assert _gated_away(DISABLED_ONLY) == set(GATES)
    assert codes_that_may_report_from_text(frozenset(AUTOCAST_RULES), DISABLED_ONLY) == frozenset()
    settings = Settings(select=sorted(GATES))
    result = lint_text(DISABLED_ONLY, "t.py", settings)
    assert result.findings == [] and result.errors == []
    assert _findings(DISABLED_ONLY, Settings(select=sorted(GATES), prefilter=False)) == []


# Each of these can hold an enabled autocast (or, for AMP015/AMP005, what else they judge): the gate
# must let the rule run.
MAY_BE_ENABLED = {
    "no enabled keyword": "with torch.autocast('cuda'):\n    loss.backward()\n",
    "enabled not literal": "with torch.autocast('cuda', enabled=amp):\n    loss.backward()\n",
    "enabled True": "with torch.autocast('cuda', enabled=True):\n    loss.backward()\n",
    "unpacked keywords": "with torch.autocast('cuda', enabled=False, **kw):\n    loss.backward()\n",
    "unpacked arguments": "with torch.autocast(*args, enabled=False):\n    loss.backward()\n",
    "alias": "ac = torch.autocast\nwith ac('cuda', enabled=False):\n    pass\nwith ac('cuda'):\n    loss.backward()\n",
    "import as": "from torch import autocast as ac\nwith ac('cuda'):\n    loss.backward()\n",
    "module import as": "import torch.amp.autocast_mode as m\nwith m.autocast('cuda'):\n    loss.backward()\n",
    "partial": "import functools\nac = functools.partial(torch.autocast, 'cuda')\nwith ac():\n    loss.backward()\n",
    "bare decorator": "@torch.autocast\ndef f():\n    loss.backward()\n",
    "named attribute item": "with self.autocast_ctx:\n    loss.backward()\n",
    "named call item": "with amp_autocast():\n    loss.backward()\n",
    "upper-case name": "with self.AutoCast():\n    loss.backward()\n",
    "helper": "def ctx():\n    return torch.autocast('cuda')\nwith ctx():\n    loss.backward()\n",
    "value passed": "run(step, context=torch.autocast)\n",
    "helper yielding a named item": "@contextmanager\ndef ctx():\n    with self.amp_autocast():\n        yield\nwith ctx():\n    loss.backward()\n",
    "named choice": "ctx = accelerator.autocast if mixed else nullcontext\nwith ctx():\n    loss.backward()\n",
    "async with": "async def f():\n    async with self.autocast_ctx:\n        loss.backward()\n",
}
# Regions only named like autocast: AMP015 judges autocast calls (of the class), of which these have none.
NAMED_ONLY = {"named attribute item", "named call item", "upper-case name", "helper yielding a named item",
              "named choice", "async with"}


@pytest.mark.parametrize("name, source", MAY_BE_ENABLED.items(), ids=MAY_BE_ENABLED)
def test_an_autocast_that_may_be_enabled_keeps_the_autocast_rules(name, source):
    evidence = TreeEvidence(ast.parse(source))
    assert evidence.autocast_region_may_enable
    kept = AUTOCAST_RULES - {"AMP015"} if name in NAMED_ONLY else AUTOCAST_RULES
    assert not kept & _gated_away(source)


# Names that say ``autocast`` but open no region: a state query, a dtype query, a dtype parameter or
# variable, a helper's own name, a disabled named item, an autocast class's module.
OPENS_NO_REGION = {
    "state query": "if torch.is_autocast_enabled(device_type):\n    loss.backward()\n",
    "dtype query": "dtype = torch.get_autocast_dtype('cuda')\nloss.backward()\n",
    "dtype parameter": "def f(x, autocast_kernel_dtype=torch.bfloat16):\n    return kernel(x, autocast_kernel_dtype=autocast_kernel_dtype)\n",
    "helper name": "def _cast_if_autocast_enabled(*args):\n    return args\nx = _cast_if_autocast_enabled(y)\n",
    "context kept for later": "autocast_ctx = self.autocast_smart_context_manager()\nstack.enter_context(autocast_ctx)\n",
    "disabled named item": "with maybe_autocast(device_type='cuda', enabled=False):\n    loss.backward()\n",
    "module import": "import torch.amp.autocast_mode\n",
}


@pytest.mark.parametrize("source", OPENS_NO_REGION.values(), ids=OPENS_NO_REGION)
def test_a_name_that_opens_no_autocast_region_drops_the_autocast_rules(source):
    evidence = TreeEvidence(ast.parse(source))
    assert not evidence.autocast_region_may_enable and not evidence.autocast_class_may_enable
    assert AUTOCAST_RULES <= _gated_away(source)
    text = "import torch\n" + source
    assert _findings(text, ON) == _findings(text, OFF)


def test_only_disabled_calls_and_plain_imports_are_read_as_off():
    source = dedent("""\
        import torch.amp.autocast_mode
        from torch import autocast
        from .x import helper as my_autocast
        def maybe_autocast(use_autocast=False):
            return helper(autocast_dtype=None)
        with torch.amp.autocast_mode.autocast("cuda", enabled=False), autocast("cpu", enabled=False):
            y = my_autocast(enabled=False)
    """)
    assert TreeEvidence(ast.parse(source)).autocast_always_off


DEVICE_CASES = {
    "indexed string": ("with torch.autocast('cuda:0', enabled=False):\n    pass\n", True),
    "indexed string variable": ("d = 'cuda:1'\nwith torch.autocast(d, enabled=False):\n    pass\n", True),
    "f-string": ("with torch.autocast(f'cuda:{rank}', enabled=False):\n    pass\n", True),
    "device call": ("with torch.autocast(torch.device('cuda'), enabled=False):\n    pass\n", True),
    "device variable": ("d = torch.device('cuda')\nwith torch.autocast(device_type=d, enabled=False):\n    pass\n", True),
    "device import as": ("from torch import device as D\nd = D('cuda')\nwith torch.autocast(d, enabled=False):\n    pass\n", True),
    "plain type": ("with torch.autocast(device_type='cuda', enabled=False):\n    pass\n", False),
    "docstring colon": ('"""Args: x"""\nwith torch.autocast(t, enabled=False):\n    pass\n', False),
    # The string in a statement the walk skips (no word a flag needs): found all the same.
    "unwalked indexed string": ("DEV = 'cuda:1'\nwith torch.autocast(DEV, enabled=False):\n    pass\n", True),
    "unwalked escaped colon": ("DEV = 'cuda\\x3a1'\nwith torch.autocast(DEV, enabled=False):\n    pass\n", True),
    "unwalked whitespace escape": ("DEV = 'cuda:\\t1\\n'\nwith torch.autocast(DEV, enabled=False):\n    pass\n", True),
    "unwalked slice and dict": ("X = y[1:2]\nZ = {'a': 'b'}\nwith torch.autocast(t, enabled=False):\n    pass\n", False),
}


@pytest.mark.parametrize("source, judged", DEVICE_CASES.values(), ids=DEVICE_CASES)
def test_amp015_runs_wherever_a_device_type_may_be_an_indexed_device_or_a_torch_device(source, judged):
    source = "import torch\n" + source
    assert ("AMP015" not in _gated_away(source)) is judged
    if judged:
        codes = [f[0] for f in _findings(source, ON)]
        assert codes.count("AMP015") == 1 and codes == [f[0] for f in _findings(source, OFF)]


@pytest.mark.parametrize("constant", ["('cuda'  # kind\n       ':1')", "'cuda:' '1'", "'cuda' r':1'"])
def test_an_indexed_string_written_in_parts_in_a_statement_not_walked_keeps_amp015(constant):
    source = f"import torch\nDEV = {constant}\nwith torch.autocast(DEV, enabled=False):\n    pass\n"
    assert "AMP015" not in _gated_away(source)


def test_an_identifier_python_normalises_to_autocast_is_walked():
    # U+FF41 (fullwidth a) is read as "a" by Python: the statement is not ASCII, so it is walked.
    source = "import torch\n\n\ndef f():\n    with torch.\uff41utocast('cuda'):\n        pass\n"
    tree = ast.parse(source)
    assert not TreeEvidence(tree, source).autocast_always_off
    assert not TreeEvidence(tree).autocast_always_off


def test_the_walk_skips_statements_without_a_flag_word_only_in_ascii_source():
    source = "import torch\n\n\ndef rotary(x):\n    return x\n\n\nwith torch.autocast('cuda', enabled=False):\n    pass\n"
    evidence = TreeEvidence(ast.parse(source), source)
    # imports are always walked; of the ``with`` statement, its items, not its ``pass``
    assert [type(s).__name__ for s, *_ in evidence._unwalked] == ["FunctionDef", "Pass"]
    accented = source.replace("return x", "return 'é'")
    assert [type(s).__name__ for s, *_ in TreeEvidence(ast.parse(accented), accented)._unwalked] == ["Pass"]


def test_the_indexed_device_test_is_the_one_amp015_applies():
    from amplint.amp.autocast import device_type_of

    for text in ["cuda:0", "cuda: 1 ", "cuda:", "cuda:x", ":0", "Args: 1", "Note:", "a:b:0", "xpu:12", "cuda:٣", "1cuda:0"]:
        assert indexed_device_text(text) == (":" in text and device_type_of(text) is not None), text


AMP_IN_USE = {
    "scaler built": "scaler = torch.amp.GradScaler()\n",
    "sharded scaler": "from torch.distributed.fsdp import ShardedGradScaler\n",
    "scaled backward": "self.scaler.scale(loss).backward()\n",
    "trainer in fp16": "args = TrainingArguments(fp16=True)\n",
}


@pytest.mark.parametrize("source", AMP_IN_USE.values(), ids=AMP_IN_USE)
def test_amp005_runs_where_amp_may_be_in_use_without_an_autocast(source):
    assert AUTOCAST_RULES & _gated_away(DISABLED_ONLY + source) == AUTOCAST_RULES - {"AMP005"}


def test_a_half_model_next_to_a_disabled_autocast_only_is_not_amp005():
    text = DISABLED_ONLY + "model = Net().half()\nfor x in data:\n    loss = model(x)\n    loss.backward()\n    opt.step()\n"
    assert "AMP005" in _gated_away(text)
    assert _findings(text, ON) == _findings(text, OFF)
    assert "AMP005" not in _gated_away(text.replace("enabled=False", "enabled=True"))


def test_amp001_needs_the_amp_module_or_a_legacy_function_name():
    from amplint.selection import codes_to_run

    select = Settings(select=("AMP001",))
    assert codes_to_run(DISABLED_ONLY, select, frozenset({"AMP001"})) == frozenset()
    for source in _examples("AMP001"):
        assert codes_to_run(source, select, frozenset({"AMP001"})) == {"AMP001"}, source


TIME_SERIES = dedent("""\
    import torch


    class MeanScaler(torch.nn.Module):
        def forward(self, data, observed):
            scale = data.abs().sum(1, keepdim=True) / observed.sum(1, keepdim=True)
            return data / scale, scale


    class Model(torch.nn.Module):
        def __init__(self, config):
            super().__init__()
            if config.scaling == "mean":
                self.scaler = MeanScaler()
            else:
                self.scaler = torch.nn.Identity()

        def forward(self, x, observed):
            scaled, scale = self.scaler(x, observed)
            return scaled * scale
""")

SCALER_RULES = {"AMP003", "AMP006", "AMP007", "AMP008", "AMP009", "AMP012", "AMP017"}


def test_a_model_whose_scaler_is_a_mean_scaler_is_not_asked_about_gradscalers():
    assert SCALER_RULES <= _gated_away(TIME_SERIES)
    # With a project context, an imported class might build a GradScaler: AMP006 runs.
    assert "AMP006" in codes_that_may_report(frozenset(SCALER_RULES), ast.parse(TIME_SERIES), with_project=True)


SCALER_EVIDENCE = {
    "construction": "scaler = torch.cuda.amp.GradScaler()\n",
    "imported class": "from torch.amp import GradScaler as GS\n",
    "unscale_": "amp_state.unscale_(optimizer)\n",
    "scaled backward": "grads.scale(loss).backward()\n",
    "named step": "self.grad_scaler.step(optimizer)\n",
    "upper-case named step": "GRAD_SCALER.step(optimizer)\n",
}


@pytest.mark.parametrize("source", SCALER_EVIDENCE.values(), ids=SCALER_EVIDENCE)
def test_anything_the_facts_read_as_a_gradscaler_keeps_the_scaler_rules(source):
    assert TreeEvidence(ast.parse(source)).scaler_evidence
    assert not SCALER_RULES & _gated_away(TIME_SERIES + source)


@pytest.mark.parametrize("source", ["loss_scaler = NativeScaler()\n", "return NativeScaler()\n", "w = ws = NativeScaler()\n"])
def test_a_scaler_wrapper_held_by_a_name_keeps_amp006(source):
    text = "def train():\n    " + source
    assert "AMP006" not in _gated_away(text)
    assert SCALER_RULES - {"AMP006"} <= _gated_away(text)


def test_amp006_on_a_wrapper_is_found_with_and_without_the_second_stage():
    text = dedent("""\
        import torch
        from timm.utils import NativeScaler


        def train(model, optimizer, loader):
            loss_scaler = NativeScaler()
            for x in loader:
                loss_scaler(model(x).sum(), optimizer)
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, "ckpt.pt")
    """)
    assert "AMP006" not in _gated_away(text)
    assert _findings(text, ON) == _findings(text, OFF)


def test_amp015_is_not_asked_where_autocast_is_only_written_in_strings():
    text = 'import torch\nd = torch.device("cuda:0")\nraise ValueError(f"run with torch.autocast on {d}")\n'
    assert not TreeEvidence(ast.parse(text)).autocast_named
    assert "AMP015" in _gated_away(text)
    for source in ("from torch import autocast\n", "import torch.amp.autocast_mode as m\nm.autocast\n", "x = torch.autocast\n",
                   "from torch import autocast as ac\n"):
        assert TreeEvidence(ast.parse(text + source)).autocast_class_named
        assert "AMP015" not in _gated_away(text + source)
    # The module of the classes, a state query: no autocast call
    for source in ("import torch.amp.autocast_mode\n", "torch.is_autocast_enabled()\n"):
        assert not TreeEvidence(ast.parse(text + source)).autocast_class_named
        assert "AMP015" in _gated_away(text + source)


def test_amp021_needs_both_flags_of_a_pair_true_in_one_call():
    from amplint.amp.frameworks import EXCLUSIVE_PRECISION_FLAGS
    from amplint.rule_gates import EXCLUSIVE_PRECISION_FLAGS as GATED_FLAGS

    assert GATED_FLAGS == EXCLUSIVE_PRECISION_FLAGS
    base = "from transformers import TrainingArguments\n"
    assert "AMP021" in _gated_away(base + "a = TrainingArguments(fp16=True, bf16=flag)\nb = TrainingArguments(bf16=True)\n")
    for call in ("TrainingArguments(fp16=True, bf16=True)", "TrainingArguments(bf16_full_eval=True, x=1, fp16_full_eval=True)"):
        text = base + f"args = {call}\n"
        assert "AMP021" not in _gated_away(text)
        assert [f[0] for f in _findings(text, ON)] == [f[0] for f in _findings(text, OFF)] == ["AMP021"]


def test_amp022_needs_a_backward_method_and_a_prepare_method():
    from amplint.rule_gates import PREPARING
    from amplint.rules.amp022_backward_bypasses_accelerator import _PREPARING

    assert PREPARING == _PREPARING
    base = "from accelerate import Accelerator\naccelerator = Accelerator(mixed_precision='fp16')\n"
    assert "AMP022" in _gated_away(base + "model = accelerator.prepare(model)\n# loss.backward()\n")
    assert "AMP022" in _gated_away(base + "loss.backward()\n")
    for source in _examples("AMP022"):
        assert "AMP022" not in _gated_away(source)


OTHER_AMP_MODULE = dedent("""\
    import torch
    from torch_xla.amp.syncfree import AdamW  # the XLA optimizer, not torch's amp


    def build(model, lr):
        # amp: XLA's syncfree optimizers skip the step on inf gradients themselves
        return AdamW(model.parameters(), lr=lr)
""")


def test_amp001_is_not_asked_where_amp_is_another_package_s_module():
    assert "AMP001" in _gated_away(OTHER_AMP_MODULE)
    assert _findings(OTHER_AMP_MODULE, ON) == _findings(OTHER_AMP_MODULE, OFF) == []


@pytest.mark.parametrize("source", [
    "import torch\nwith torch.cuda.amp.autocast():\n    pass\n",
    "from torch.cuda import amp\nscaler = amp.GradScaler()\n",
    "from torch.cuda.amp import GradScaler\nscaler = GradScaler()\n",
    "import torch.cuda.amp\nscaler = torch.cuda.amp.GradScaler()\n",
    "from torch import cuda\nwith cuda.amp.autocast():\n    pass\n",
    "import torch\ndtype = torch.get_autocast_gpu_dtype()\n",
    "from torch import is_autocast_cpu_enabled\nflag = is_autocast_cpu_enabled()\n",
    "from . import amp\nscaler = amp.GradScaler()\n",
    "import torch\nx: 'torch.cuda.amp.GradScaler' = None\n",
])
def test_every_way_to_reach_torch_s_amp_module_keeps_amp001(source):
    assert "AMP001" not in _gated_away(source)


def test_amp024_needs_a_scaler_or_an_autocast_that_may_be_enabled():
    mentions = dedent("""\
        from accelerate import Accelerator
        import deepspeed


        def load(model, dtype):
            if dtype == "fp16":
                raise ValueError("run training under `with torch.autocast(device_type='cuda'):`")
            return deepspeed.init_inference(model)
    """)
    assert "AMP024" in _gated_away(mentions)
    assert "AMP024" not in _gated_away(mentions + "\nwith torch.autocast('cuda'):\n    pass\n")
    assert "AMP024" not in _gated_away(mentions + "\nscaler = torch.amp.GradScaler('cuda')\n")


def test_an_import_of_torch_s_amp_inside_a_try_is_walked():
    source = "try:\n    from torch.cuda import amp\nexcept ImportError:\n    amp = None\n\nscaler = amp.GradScaler() if amp else None\n"
    assert "AMP001" not in _gated_away(source)


def test_amp014_needs_a_state_query_given_no_argument():
    base = "import torch\n"
    for source in ("x = torch.is_autocast_enabled('cuda')\n", "y = torch.is_autocast_enabled(device_type=d)\n",
                   "from torch import is_autocast_enabled\nz = is_autocast_enabled(dev)\n"):
        assert "AMP014" in _gated_away(base + source), source
    for source in ("x = torch.is_autocast_enabled()\n", "check = torch.is_autocast_enabled\n",
                   "from torch import is_autocast_enabled as on\n", "y = f(torch.is_autocast_enabled)\n"):
        assert "AMP014" not in _gated_away(base + source), source


def test_amp020_needs_a_legacy_precision_literal():
    from amplint.amp.frameworks import LEGACY_PRECISIONS
    from amplint.tree_literals import LEGACY_PRECISION_STRINGS

    assert set(LEGACY_PRECISION_STRINGS) == set(LEGACY_PRECISIONS)
    base = "import lightning as L\n"
    for value in ('"16-mixed"', '"bf16-mixed"', "32", "precision", '"32"'):
        assert "AMP020" in _gated_away(base + f"trainer = L.Trainer(precision={value})\n"), value
    for value in ("16", '"16"', '"bf16"', 'f"bf16"'):
        text = base + f"trainer = L.Trainer(max_epochs=1,\n    precision={value})\n"
        assert "AMP020" not in _gated_away(text), value
        assert _findings(text, ON) == _findings(text, OFF)


def test_amp026_and_amp027_need_a_plain_backward_and_amp027_an_fp16_section():
    ds = "import deepspeed\nengine, opt, _, _ = deepspeed.initialize(model=m, config={'fp16': {'enabled': True}})\n"
    # ``engine.backward(loss)`` is a backward too: the rule, not the gate, tells it from a plain one.
    assert {"AMP026", "AMP027"} <= _gated_away(ds + "# loss.backward()\nbackward(loss)\n")
    assert "AMP027" not in _gated_away(ds + "loss.backward()\n")
    for config in ("{'bf16': {'enabled': True}}", "{'fp16': {'enabled': False}}", "{'fp16': cfg}", "cfg"):
        assert "AMP027" in _gated_away(ds.replace("{'fp16': {'enabled': True}}", config) + "loss.backward()\n"), config
    # A config the facts read from elsewhere: a float16 torch_autocast section, a JSON file of the project.
    for config in ("{'torch_autocast': {'enabled': True, 'dtype': 'float16'}}", "'configs/ds_fp16.json'"):
        assert "AMP027" not in _gated_away(ds.replace("{'fp16': {'enabled': True}}", config) + "loss.backward()\n"), config
        inside = "def main():\n    import deepspeed\n    engine = deepspeed.initialize(model=m, config=%s)\n    loss.backward()\n" % config
        assert "AMP027" not in _gated_away(inside), config
        # A trainer that writes "trainer_state.json" and imports no deepspeed is not asked.
        assert "AMP027" in _gated_away(ds.replace("import deepspeed\n", "from .integrations.deepspeed import x\n")
                                       .replace("{'fp16': {'enabled': True}}", config) + "loss.backward()\n"), config


def test_amp028_needs_bf16_true():
    text = dedent("""\
        import torch
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
        model = AutoModelForCausalLM.from_pretrained("m", torch_dtype=torch.bfloat16)
        trainer = Trainer(model=model, args=TrainingArguments("out", bf16=True))
    """)
    assert "AMP028" not in _gated_away(text)
    assert [f[0] for f in _findings(text, ON)] == [f[0] for f in _findings(text, OFF)]
    assert "AMP028" in _gated_away(text.replace("bf16=True", "bf16=flag"))


def test_amp019_needs_a_torch_clip_reached_through_an_import():
    from amplint.rules.amp019_clip_grad_while_accelerator_scales import _CLIPS
    from amplint.tree_literals import TORCH_CLIP_NAMES

    assert TORCH_CLIP_NAMES == {name.rsplit(".", 1)[-1] for name in _CLIPS}
    base = "import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator()\n"
    loop = "accelerator.backward(loss)\n{clip}\noptimizer.step()\n"
    for clip in ("accelerator.clip_grad_norm_(model.parameters(), 1.0)", "self.accelerator.clip_grad_value_(p, 1)",
                 "clip_grad_norm_(p, 1.0)"):
        assert "AMP019" in _gated_away(base + loop.format(clip=clip)), clip
    for clip in ("torch.nn.utils.clip_grad_norm_(p, 1.0)", "nn.utils.clip_grad_value_(p, 1)"):
        text = base + "from torch import nn\n" + loop.format(clip=clip)
        assert "AMP019" not in _gated_away(text), clip
        assert _findings(text, ON) == _findings(text, OFF)
    # Imported inside a function the walk leaves out, or under another name
    inner = "def f(p):\n    from torch.nn.utils import clip_grad_norm_\n    return p\n"
    assert "AMP019" not in _gated_away(base + inner + loop.format(clip="clip_grad_norm_(p, 1.0)"))
    hidden = "from torch.nn.utils import clip_grad_norm_ as clip\n"
    assert "AMP019" not in _gated_away(base + hidden + loop.format(clip="clip(p, 1.0)"))


AMP022_BASE = "from accelerate import Accelerator\naccelerator = Accelerator(mixed_precision='fp16')\n"


def test_amp022_needs_a_backward_and_a_step_in_one_function():
    apart = AMP022_BASE + dedent("""\
        class Trainer:
            def setup(self):
                self.optimizer = self.accelerator.prepare(self.optimizer)

            def training_step(self, loss):
                loss.backward()

            def loop(self):
                self.optimizer.step()
    """)
    assert "AMP022" in _gated_away(apart)
    together = apart.replace("        loss.backward()\n", "        loss.backward()\n        self.optimizer.step()\n")
    assert "AMP022" not in _gated_away(together)
    # A step at module level in a statement the walk leaves out, beside a module-level backward
    module = AMP022_BASE + "model, optimizer = accelerator.prepare(model, optimizer)\nloss.backward()\nif True:\n    optimizer.step()\n"
    assert "AMP022" not in _gated_away(module)
    assert [f[0] for f in _findings(module, ON)] == [f[0] for f in _findings(module, OFF)] == ["AMP022"]
    # A default value runs in the caller's scope: a step there is beside a backward of the caller.
    default = AMP022_BASE + "def train(model, optimizer):\n    model, optimizer = accelerator.prepare(model, optimizer)\n" \
        "    loss.backward()\n    def later(done=optimizer.step()):\n        pass\n"
    assert "AMP022" not in _gated_away(default)


# Each flag read after the walk, from a statement it left out deep inside a function it walked
# (the function spells a walk word on another line).
LEFT_OUT_INSIDE = {
    "AMP015": ("def f(x):\n    with torch.autocast(x, enabled=False):\n        pass\n    if x:\n        x = 'cuda:1'\n", "import torch\n"),
    "AMP020": ("def f(bf16):\n    if bf16:\n        return L.Trainer(\n            precision=16)\n", "import lightning as L\n"),
    "AMP019": ("def f(accelerator, p):\n    accelerator.backward(loss)\n    if p:\n        clip(p, 1.0)\n",
               "from torch.nn.utils import clip_grad_norm_ as clip\nfrom accelerate import Accelerator\n"),
    "AMP022": ("def f(accelerator, optimizer, model):\n    model, optimizer = accelerator.prepare(model, optimizer)\n"
               "    for x in data:\n        loss.backward()\n        if x:\n            optimizer.step()\n",
               "from accelerate import Accelerator\naccelerator = Accelerator(mixed_precision='fp16')\n"),
}


@pytest.mark.parametrize("code", sorted(LEFT_OUT_INSIDE))
def test_a_flag_read_after_the_walk_is_found_in_a_statement_it_left_out_inside_a_function(code):
    body, head = LEFT_OUT_INSIDE[code]
    assert code not in _gated_away(head + body)


def test_the_cut_lines_rule_out_amp022_only_where_a_backward_or_a_prepare_is_missing():
    codes = frozenset({"AMP022", "AMP026"})
    backward_alone = "def train(model, opt, loss):\n    loss.backward()\n    opt.step()\n"
    assert codes_that_may_report_from_text(codes, backward_alone) == {"AMP026"}
    prepared = "model, opt = accelerator.prepare(model, opt)\n" + backward_alone
    # Both flags hold: whether the step is beside the backward needs the whole tree.
    assert codes_that_may_report_from_text(codes, prepared) is None
    assert codes_that_may_report(codes, ast.parse(prepared)) == codes
    apart = "model, opt = accelerator.prepare(model, opt)\ndef a(loss):\n    loss.backward()\ndef b(opt):\n    opt.step()\n"
    assert codes_that_may_report_from_text(codes, apart) is None
    assert codes_that_may_report(codes, ast.parse(apart)) == {"AMP026"}


def test_device_strings_are_cut_only_where_an_autocast_class_may_be_named():
    codes = frozenset({"AMP015"})
    indexed = 'import torch\nfrom torch import autocast\ndevice = "cuda:0"\n\ndef f(x):\n    with autocast(device_type=device):\n        return x\n'
    assert codes_that_may_report_from_text(codes, indexed) == codes
    assert codes_that_may_report(codes, ast.parse(indexed)) == codes
    # No ``autocast``: no autocast class can be named, and AMP015 is ruled out without the strings.
    plain = 'import torch\ndevice = "cuda:0"\nx = torch.device(device)\n'
    assert codes_that_may_report_from_text(codes, plain) == frozenset()
    # An identifier outside ASCII that Python reads as ``autocast``: the strings are cut too.
    wide = indexed.replace("from torch import autocast", "from torch import \uff41utocast").replace("with autocast", "with \uff41utocast")
    assert codes_that_may_report(codes, ast.parse(wide)) == codes
    assert codes_that_may_report_from_text(codes, wide) in (None, codes)
