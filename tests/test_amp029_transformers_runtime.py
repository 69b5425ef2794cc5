"""Runtime truth for AMP029 with the real transformers 5.

The installed transformers (the ``frameworks`` extra, 5.25.0) raises ``TypeError`` for each of
the three removed arguments; the fixed call builds. What transformers 4 does with them is read
from its source (4.57.6 ``training_args.py:1081-1096``, ``1437-1443``, ``1729-1735``): there is
no second transformers in the test environment to run it.
"""

from __future__ import annotations

import pytest

from amplint.api import fix_source
from test_amp029_transformers_version import ON_FIVE, SOURCE

pytestmark = pytest.mark.slow


def test_transformers_5_raises_for_each_and_builds_the_fixed_call(tmp_path):
    transformers = pytest.importorskip("transformers", reason="the frameworks extra (transformers) is not installed")
    assert int(transformers.__version__.split(".")[0]) >= 5
    namespace: dict = {}
    for name in ("fp16_opt_level", "half_precision_backend", "fp16_backend"):
        with pytest.raises(TypeError, match=f"unexpected keyword argument '{name}'"):
            transformers.TrainingArguments(output_dir=str(tmp_path), use_cpu=True, **{name: "auto"})
    exec(compile(fix_source(SOURCE, settings=ON_FIVE), "<fixed>", "exec"), namespace)
    assert namespace["build"](str(tmp_path)).output_dir == str(tmp_path)
