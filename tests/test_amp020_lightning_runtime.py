"""Runtime truth for AMP020 with the real Lightning (the ``frameworks`` extra; skipped without it).

Lightning 2.6.6 still accepts ``precision=16`` / ``"16"`` / ``"bf16"``, warns "is supported for
historical reasons but its usage is discouraged" and maps them to ``"16-mixed"`` /
``"bf16-mixed"`` (``lightning/fabric/connector.py:557-576``, through
``_PRECISION_INPUT_STR_ALIAS_CONVERSION`` in ``lightning/fabric/plugins/precision/precision.py:24``).
The tests build a Trainer and a Fabric on CPU from the legacy source and from amplint's fix of
it: the same precision plugin, and only the legacy one warns. (On CPU Lightning then switches
fp16 AMP to bf16 with a warning of its own, for the old and the new spelling alike.)
"""

from __future__ import annotations

import warnings

import pytest

from amplint.api import fix_source, lint_source

# Starts torch or a process that trains, verifies or runs pre-commit: not in the fast tier.
pytestmark = pytest.mark.slow

pytest.importorskip("torch")
pytest.importorskip("lightning", reason="the frameworks extra (lightning) is not installed")

HISTORICAL = "supported for historical reasons"

SOURCE = """\
import lightning as L
from lightning.fabric import Fabric


def build():
    trainer = L.Trainer(accelerator="cpu", devices=1, precision=16, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    bf16_trainer = L.Trainer(accelerator="cpu", devices=1, precision="bf16", logger=False,
                             enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    fabric = Fabric(accelerator="cpu", devices=1, precision="16")
    return [
        (type(t.precision_plugin).__name__, t.precision) for t in (trainer, bf16_trainer)
    ] + [(type(fabric._precision).__name__, fabric._precision.precision)]
"""


def _build(source: str):
    namespace: dict = {}
    exec(compile(source, "<script>", "exec"), namespace)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        built = namespace["build"]()
    return built, [str(w.message) for w in caught if HISTORICAL in str(w.message)]


def test_legacy_values_warn_and_the_fix_configures_the_same_precision():
    findings = lint_source(SOURCE, settings={"select": ["AMP020"]})
    assert [f.code for f in findings] == ["AMP020"] * 3
    fixed = fix_source(SOURCE, settings={"select": ["AMP020"]})
    assert 'precision="16-mixed"' in fixed and 'precision="bf16-mixed"' in fixed
    assert lint_source(fixed, settings={"select": ["AMP020"]}) == []

    legacy, legacy_warnings = _build(SOURCE)
    new, new_warnings = _build(fixed)
    assert len(legacy_warnings) == 3
    assert "Please set your precision to 16-mixed instead!" in legacy_warnings[0]
    assert new_warnings == []
    assert legacy == new


def test_the_alias_table_amplint_encodes():
    from lightning.fabric.plugins.precision.precision import _PRECISION_INPUT_STR_ALIAS_CONVERSION

    from amplint.amp.frameworks import LEGACY_PRECISIONS

    assert {k: v for k, v in _PRECISION_INPUT_STR_ALIAS_CONVERSION.items() if k not in ("32", "64")} == LEGACY_PRECISIONS


def test_the_trainer_and_fabric_parameters_amplint_knows():
    """A keyword outside these marks a Lightning 1.x call (AMP020 is then silent)."""
    import inspect

    import lightning

    from amplint.amp.frameworks import FABRIC_PARAMETERS, TRAINER_PARAMETERS

    assert set(inspect.signature(lightning.Trainer.__init__).parameters) - {"self"} == TRAINER_PARAMETERS
    assert set(inspect.signature(lightning.Fabric.__init__).parameters) - {"self"} == FABRIC_PARAMETERS
