"""One verify run's instrumentation: shared AMP state, step telemetry and the dynamic checks.

``Instrumentation.install`` wires them to torch through :class:`Hooks`; afterwards ``steps()``
and ``finding_list()`` are the run's records.
"""

from __future__ import annotations

from typing import Any, Callable

from amplint.model import Finding

from .checkpoints import CheckpointRedirect
from .checks import ALL_CHECKS
from .findings import make_finding, sort_findings
from .hooks import Hooks
from .patching import Patcher
from .state import AmpState
from .telemetry import StepRecord, StopRun, Telemetry

__all__ = ["Instrumentation", "StepRecord", "StopRun"]


class Instrumentation:
    def __init__(
        self,
        max_steps: int | None,
        on_step: Callable[[int, dict], None] | None = None,
        redirect: CheckpointRedirect | None = None,
        evaluator: Any = None,
    ) -> None:
        self.state = AmpState()
        self.telemetry = Telemetry(max_steps, on_step, evaluator.at_last_step if evaluator is not None else None)
        if evaluator is not None:
            evaluator.bind(self.telemetry, self.state)
        self.redirect = redirect
        self.findings: dict[tuple[str, str, int], Finding] = {}
        self.checks = [check(self.state, self._report) for check in ALL_CHECKS]

    def _report(self, code: str, detail: str, site: tuple[str, int]) -> None:
        path, line = site
        self.findings.setdefault((code, path, line), make_finding(code, detail, path, line))

    def install(self, patcher: Patcher) -> None:
        Hooks(self.state, self.telemetry, self.checks, self.redirect).install(patcher)

    def steps(self) -> list[StepRecord]:
        return self.telemetry.steps()

    def finding_list(self) -> list[Finding]:
        return sort_findings(list(self.findings.values()))

    @property
    def scalers_constructed(self) -> int:
        return self.state.scalers_constructed

    @property
    def autocast_dtypes(self) -> set[str]:
        return self.state.autocast_dtypes
