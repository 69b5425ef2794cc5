"""``--add-noqa`` on a notebook changes exactly the JSON strings of the flagged source lines:
outputs, metadata, indentation, key order, escapes of the other lines and the final newline
stay byte for byte as they were."""

from __future__ import annotations

import shutil
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent.parent / "fixtures" / "notebooks"


def test_the_fixture_gains_only_the_directives(cli, tmp_path):
    path = tmp_path / "train.ipynb"
    shutil.copy(NOTEBOOKS / "train_with_outputs.ipynb", path)
    before = path.read_text(encoding="utf-8")
    expected = before
    for line, code in [
        ('"scaler = torch.cuda.amp.GradScaler()  # expect: AMP001', "AMP001"),
        ('"    with torch.cuda.amp.autocast():  # expect: AMP001', "AMP001"),
        ('"    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: AMP003', "AMP003"),
        ('\\"ckpt.pt\\")  # expect: AMP006', "AMP006"),
    ]:
        assert expected.count(line) == 1
        expected = expected.replace(line, f"{line}  # noqa: {code}")
    run = cli("check", "--no-cache", "--add-noqa", "train.ipynb")
    assert (run.exit_code, run.stderr) == (0, "Added 4 noqa directives.\n"), run
    assert path.read_bytes() == expected.encode("utf-8")
    assert path.read_bytes().endswith(b"\n }\n}\n") == before.endswith("\n }\n}\n")


# Written by no json.dumps settings: three-space indentation of the outputs, a float as
# ``1.0e-5``, "\/" and "\u00e9" escapes in lines the directive does not touch, no final newline.
ODD = r"""{
  "metadata": {"lr": 1.0e-5, "kernelspec": {"name": "python3"}},
  "cells": [
    {
      "source": [
        "import torch  # caf\u00e9 \/ bar\n",
        "with torch.cuda.amp.autocast():\n",
        "    pass\n"
      ],
      "outputs": [
         {"output_type": "stream", "name": "stdout", "text": ["\u00e9\n"]}
      ],
      "cell_type": "code", "metadata": {}, "execution_count": 7
    }
  ],
  "nbformat": 4, "nbformat_minor": 5
}"""


def test_a_layout_no_serialiser_writes_keeps_every_other_byte(cli, tmp_path):
    path = tmp_path / "odd.ipynb"
    path.write_bytes(ODD.encode("utf-8"))
    run = cli("check", "--no-cache", "--add-noqa", "odd.ipynb")
    assert (run.exit_code, run.stderr) == (0, "Added 1 noqa directive.\n"), run
    expected = ODD.replace('"with torch.cuda.amp.autocast():\\n"', '"with torch.cuda.amp.autocast():  # noqa: AMP001\\n"')
    assert expected != ODD
    assert path.read_bytes() == expected.encode("utf-8")
