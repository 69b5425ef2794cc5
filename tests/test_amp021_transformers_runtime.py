"""Runtime truth for AMP021 with the real transformers (the ``frameworks`` extra; skipped without it).

``TrainingArguments.__post_init__`` raises ``ValueError: At most one of fp16 and bf16 can be True,
but not both`` (transformers 5.25.0 ``training_args.py:1784-1785``; the full-eval pair at
1787-1788), for ``Seq2SeqTrainingArguments`` too. ``use_cpu=True`` is passed because on a machine
without a bf16 GPU ``bf16=True`` alone already raises earlier (``training_args.py:1777-1782``).
"""

from __future__ import annotations

import pytest

from amplint.api import lint_source

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

pytest.importorskip("torch")
pytest.importorskip("transformers", reason="the frameworks extra (transformers) is not installed")

BOTH = """\
from transformers import Seq2SeqTrainingArguments, TrainingArguments


def build(output_dir):
    return TrainingArguments(output_dir=output_dir, use_cpu=True, fp16=True, bf16=True)


def build_seq2seq(output_dir):
    return Seq2SeqTrainingArguments(output_dir=output_dir, use_cpu=True, fp16_full_eval=True, bf16_full_eval=True)
"""
ONE = BOTH.replace("fp16=True, ", "").replace("fp16_full_eval=True, ", "")


def _functions(source: str):
    namespace: dict = {}
    exec(compile(source, "<script>", "exec"), namespace)
    return namespace["build"], namespace["build_seq2seq"]


def test_both_flags_raise_and_amplint_reports_them(tmp_path):
    assert [f.code for f in lint_source(BOTH, settings={"select": ["AMP021"]})] == ["AMP021", "AMP021"]
    build, build_seq2seq = _functions(BOTH)
    with pytest.raises(ValueError, match="At most one of fp16 and bf16 can be True, but not both"):
        build(str(tmp_path))
    with pytest.raises(ValueError, match="At most one of fp16 and bf16 can be True for full eval"):
        build_seq2seq(str(tmp_path))


def test_one_flag_builds_and_amplint_is_silent(tmp_path):
    assert lint_source(ONE, settings={"select": ["AMP021"]}) == []
    build, build_seq2seq = _functions(ONE)
    assert build(str(tmp_path)).bf16 is True
    assert build_seq2seq(str(tmp_path)).bf16_full_eval is True
