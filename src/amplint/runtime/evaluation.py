"""``--eval``: call the user's evaluation function on the trained model at the end of each run.

The function is named ``module:function`` or ``path/to/file.py:function``; a function of the
script itself (``train.py:evaluate``) is taken from the running script, not imported again. It
receives the trained model when it takes an argument (nothing otherwise) and returns the outputs
for a fixed batch: a tensor, one row per input. It is called once per run, in that run's process,
right after the last optimizer step verify records (the script's frames are alive then, so a
model that is a local of ``main()`` is still there), with the model in ``eval()`` mode under
``torch.no_grad()``; autocast regions inside it run as in the rest of the run (reduced precision
in the AMP run, disabled in the FP32 reference). A script that ends before ``--steps`` is
evaluated when it ends, if its model is still reachable.

The trained model is the innermost ``nn.Module`` holding every parameter of the optimizer that
defines the steps (so a ``DistributedDataParallel`` wrapper is looked through).
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import inspect
import os
import sys
from typing import Any

MAX_OUTPUTS = 1_000_000  # elements: the outputs travel back to the report as JSON


def split_spec(spec: str) -> tuple[str, str]:
    """``"pkg.mod:fn"`` -> ``("pkg.mod", "fn")``; ValueError when there is no function name."""
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name.isidentifier():
        raise ValueError(f"--eval {spec!r}: give module:function or path.py:function")
    return where, name


class Evaluator:
    def __init__(self, spec: str, script: str | None, module: str | None) -> None:
        self.spec, self.script, self.module = spec, script, module
        self.result: dict[str, Any] | None = None
        self._optimizer_ref: Any = None
        self._paused_state: Any = None

    # -- wired by the runner -------------------------------------------------------------------

    def bind(self, telemetry: Any, state: Any) -> None:
        self._telemetry, self._state = telemetry, state

    def at_last_step(self, step_count: int) -> None:
        if self.result is None:
            self.result = self._run(step_count, sys.modules.get("__main__"))

    def at_end(self, step_count: int, main_globals: dict[str, Any] | None) -> None:
        if self.result is None and step_count > 0:
            self.result = self._run(step_count, main_globals)
        if self.result is None:
            self.result = {"error": "the run stopped before its first optimizer step: no trained model to evaluate",
                           "at_step": None}

    # -- the call ------------------------------------------------------------------------------

    def _run(self, step_count: int, main: Any) -> dict[str, Any]:
        import torch

        out: dict[str, Any] = {"at_step": step_count - 1}
        try:
            fn = self._function(main)
            model = self._model(torch)
        except _Unavailable as exc:
            out["error"] = str(exc)
            return out
        self._state.paused = True
        was_training = model.training if model is not None else None
        try:
            if model is not None:
                model.eval()
            with torch.no_grad():
                value = fn(model) if _takes_argument(fn) else fn()
            out.update(_outputs(torch, value))
        except Exception as exc:  # the user's function failing is a result to report
            out["error"] = f"the --eval function raised {type(exc).__name__}: {exc}".splitlines()[0][:300]
        finally:
            if model is not None and was_training is not None:
                model.train(was_training)
            self._state.paused = False
        return out

    def _function(self, main: Any) -> Any:
        try:
            where, name = split_spec(self.spec)
        except ValueError as exc:
            raise _Unavailable(str(exc)) from None
        namespace = None
        if self._is_the_script(where):
            namespace = main if isinstance(main, dict) else getattr(main, "__dict__", None)
        if namespace is None:
            namespace = vars(self._import(where))
        fn = namespace.get(name)
        if not callable(fn):
            raise _Unavailable(f"--eval {self.spec}: {where} has no function {name}")
        return fn

    def _is_the_script(self, where: str) -> bool:
        if self.script and where.endswith(".py"):
            return os.path.abspath(where) == os.path.abspath(self.script)
        return self.module is not None and where == self.module

    def _import(self, where: str) -> Any:
        try:
            if where.endswith(".py"):
                path = os.path.abspath(where)
                spec = importlib.util.spec_from_file_location(f"_amplint_eval_{abs(hash(path))}", path)
                if spec is None or spec.loader is None:
                    raise ImportError(f"cannot load {where}")
                mod = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(mod)
                return mod
            return importlib.import_module(where)
        except Exception as exc:
            raise _Unavailable(f"--eval {self.spec}: cannot import {where}: {type(exc).__name__}: {exc}") from None

    def _model(self, torch: Any) -> Any:
        ref = getattr(self._telemetry, "_primary_ref", None)
        optimizer = ref() if ref is not None else None
        if optimizer is None:
            raise _Unavailable("the trained model is no longer reachable when the script ends "
                               "(let verify stop the run: --steps below the script's own)")
        params = {id(p) for g in optimizer.param_groups for p in g["params"]}
        module_type = torch.nn.Module
        # type(), not isinstance(): a lazy module's __getattr__ must not be asked for __class__
        modules = [o for o in gc.get_objects() if issubclass(type(o), module_type)]
        holding = [m for m in modules if params <= {id(p) for p in m.parameters()}]
        inner = [m for m in holding if not any(o is not m and _contains(m, o) for o in holding)]
        if not inner:
            raise _Unavailable("no nn.Module holds every parameter of the optimizer verify follows")
        return inner[0]


class _Unavailable(Exception):
    pass


def _contains(outer: Any, inner: Any) -> bool:
    return any(m is inner for m in outer.modules())


def _takes_argument(fn: Any) -> bool:
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    except (TypeError, ValueError):
        return True
    return bool(params)


def _outputs(torch: Any, value: Any) -> dict[str, Any]:
    if not isinstance(value, torch.Tensor):
        try:
            value = torch.as_tensor(value)
        except Exception:
            raise TypeError(f"it returned {type(value).__name__}; return a tensor of outputs, one row per input") from None
    if value.dim() == 0:
        raise TypeError("it returned a scalar; return a tensor of outputs, one row per input")
    if value.numel() > MAX_OUTPUTS:
        raise TypeError(f"it returned {value.numel()} values; return at most {MAX_OUTPUTS}")
    return {
        "shape": list(value.shape),
        "dtype": str(value.dtype).replace("torch.", ""),
        "outputs": value.detach().to("cpu", torch.float64).tolist(),
    }
