"""Programs generated from Python's grammar (hypothesmith), alone and with AMP training code
around them: linting never raises, findings stay inside the file, fixes compile and converge."""

from __future__ import annotations

import hypothesmith
from hypothesis import given
from hypothesis import strategies as st

from fuzz_support import check_program

# AMP code the generated program is joined to, so that the rules and fixes run on it too.
AMP_TAILS = (
    "",
    "import torch\nscaler = torch.cuda.amp.GradScaler()\nwith torch.cuda.amp.autocast():\n    loss = model(x)\n"
    "scaler.scale(loss).backward()\ntorch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
    "scaler.step(opt)\nscaler.update()\n",
    "import torch\n\ndef train(model, loader, optimizer):\n    for x, y in loader:\n"
    "        scaler = torch.amp.GradScaler('cuda')\n        with torch.autocast('cuda'):\n"
    "            loss = model(x, y)\n            loss.backward()\n        optimizer.step()\n        scaler.update()\n",
    "from torch.cuda.amp import autocast\nx = f'{torch.is_autocast_enabled()}'\n@autocast()\ndef f():\n    pass\n",
)

programs = st.one_of(hypothesmith.from_grammar(), hypothesmith.from_node())


@given(programs, st.sampled_from(AMP_TAILS), st.booleans())
def test_generated_programs_never_crash_and_fix_cleanly(program, tail, tail_first):
    if not tail:
        code = program
    elif tail_first:
        code = tail + program
    else:
        code = program + ("" if program.endswith(("\n", "\r")) or not program else "\n") + tail
    check_program(code)
