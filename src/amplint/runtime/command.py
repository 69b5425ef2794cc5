"""The click command behind ``amplint verify`` (registered lazily by amplint.cli.main)."""

from __future__ import annotations

import os
import signal
import sys

import click

_HELP = """Run SCRIPT (or -m MODULE) with AMP for --steps optimizer steps and judge whether it
trains, against an FP32 reference of the same script.

This executes the script's code, twice (each run in its own process), with your permissions:
verify only code you would run yourself. What it writes (checkpoints, logs) goes to a
temporary directory that verify removes afterwards; a write verify cannot redirect is refused
and the run ends with exit 2.

Arguments after `--` are passed to the script (so are options verify does not know).

Exit 0 trains, 1 a criterion failed (or a runtime finding, with --fail-on-findings), 2 could not
run (missing script, the script fails without AMP too, timeout...), 3 inconclusive (the FP32
reference is non-finite or diverges, does not decrease, or its noise exceeds the tolerance),
4 no AMP (no enabled autocast region or GradScaler was seen; --allow-no-amp judges it anyway)."""

EXIT_INTERRUPTED = 130
_TERMINATING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


@click.command("verify", help=_HELP, context_settings={"ignore_unknown_options": True})
@click.option("-m", "module", metavar="MODULE", help="Run a module like `python -m MODULE`.")
@click.option("--steps", type=click.IntRange(min=1), default=50, show_default=True, help="Optimizer steps per run.")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True)
@click.option("--dtype", type=click.Choice(["auto", "float16", "bfloat16"]), default="auto", show_default=True,
              help="Force every autocast region to this dtype (auto: as written; float16 for CUDA code remapped to CPU).")
@click.option("--baseline", type=click.Choice(["fp32", "none"]), default="fp32", show_default=True)
@click.option("--rtol", type=click.FloatRange(min=0), default=0.1, show_default=True,
              help="Final loss may exceed the reference's by this fraction.")
@click.option("--max-skipped-frac", type=click.FloatRange(0, 1), default=0.1, show_default=True,
              help="Largest fraction of skipped steps after scaler calibration.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for random, numpy and torch before each run.")
@click.option("--nproc-per-node", type=click.IntRange(min=1), default=1, show_default=True,
              help="Launch the script with torchrun on this many local ranks (gloo on CPU).")
@click.option("--timeout", type=click.FloatRange(min=0), default=600, show_default=True,
              help="Seconds each run may take (AMP, then the reference); 0 for no limit.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False),
              help="Write the report as JSON to this file (refused if it is the script or one of its arguments).")
@click.option("--plot", "plot_out", type=click.Path(dir_okay=False),
              help="Write loss and scale curves, the verdict and its reason (and the --eval panel) to this file, as its suffix says (png, pdf, svg, jpg... what "
                   "matplotlib writes; no suffix: PNG); refused if it is the script or one of its arguments.")
@click.option("--allow-no-amp", is_flag=True,
              help="Judge a run with no enabled autocast region or GradScaler like any other (default: exit 4, NO AMP).")
@click.option("--fail-on-findings", is_flag=True, help="A runtime finding fails the run (exit 1), whatever the losses say.")
@click.option("--eval", "eval_spec", metavar="MODULE:FUNCTION",
              help="Call FUNCTION (module:function or path.py:function) on each run's trained model after its last "
                   "step; it returns the outputs for a fixed batch, compared AMP vs reference (see docs/verify.md).")
@click.option("--eval-atol", type=click.FloatRange(min=0), default=1e-3, show_default=True,
              help="Absolute tolerance on the --eval outputs: |amp - ref| <= atol + rtol x |ref|.")
@click.option("--eval-rtol", type=click.FloatRange(min=0), default=1e-2, show_default=True,
              help="Relative tolerance on the --eval outputs.")
@click.option("--eval-threshold", type=float, default=None,
              help="Decisions are score > T (one output per input) instead of the argmax of each row.")
@click.option("--eval-max-changed-frac", type=click.FloatRange(0, 1), default=0.0, show_default=True,
              help="Largest fraction of --eval inputs whose decision may change.")
@click.option("--progress/--no-progress", default=None, help="Progress bar on stderr (default: when stderr is a terminal).")
@click.argument("script_and_args", nargs=-1, type=click.UNPROCESSED, metavar="SCRIPT [-- SCRIPT_ARGS...]")
def verify_command(module, steps, device, dtype, baseline, rtol, max_skipped_frac, seed, nproc_per_node, timeout,
                   json_out, plot_out, allow_no_amp, fail_on_findings, eval_spec, eval_atol, eval_rtol, eval_threshold,
                   eval_max_changed_frac, progress, script_and_args):
    args = list(script_and_args)
    if args and args[0] == "--":
        args = args[1:]
    script = None
    if module is None:
        if not args:
            raise click.UsageError("give a SCRIPT or -m MODULE")
        script, args = args[0], args[1:]
    if args and args[0] == "--":
        args = args[1:]
    # an output path that cannot be written, or must not be, is found before the runs, not after them
    problem = _output_onto_input(script, args, json_out, plot_out)
    if problem:
        _fail(problem)
    if plot_out:
        from .plot import plot_format

        try:
            plot_format(plot_out)
        except ValueError as exc:
            _fail(f"cannot write --plot {plot_out}: {exc}")
    for option, path in (("--json", json_out), ("--plot", plot_out)):
        problem = _unwritable(path)
        if problem:
            _fail(f"cannot write {option} {path}: {problem}")

    try:
        from .api import verify
    except ImportError as exc:  # torch missing: the runtime extra is not installed
        _fail(f"amplint verify needs torch: pip install 'amplint[runtime]' ({exc})")
    try:
        import torch  # noqa: F401
    except ImportError:
        _fail("amplint verify needs torch: pip install 'amplint[runtime]'")

    from .launch import Interrupted
    from .process_groups import Terminated, raise_terminated

    # SIGTERM and SIGHUP unwind like Ctrl-C, so the runs are stopped and the temporary folder removed
    previous = {sig: signal.signal(sig, raise_terminated) for sig in _TERMINATING_SIGNALS}
    try:
        result = verify(
            script, args, module=module, steps=steps, device=device, dtype=dtype, baseline=baseline, rtol=rtol,
            max_skipped_frac=max_skipped_frac, seed=seed, nproc_per_node=nproc_per_node, timeout=timeout,
            allow_no_amp=allow_no_amp, fail_on_findings=fail_on_findings, evaluate=eval_spec, eval_atol=eval_atol,
            eval_rtol=eval_rtol, eval_threshold=eval_threshold, eval_max_changed_frac=eval_max_changed_frac,
            progress=progress, announce=lambda line: click.echo(line),
        )
    except (Interrupted, KeyboardInterrupt):
        _fail("interrupted: the runs were stopped", EXIT_INTERRUPTED)
    except Terminated as exc:
        _fail(f"received {signal.Signals(exc.signum).name}: the runs were stopped", 128 + exc.signum)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    from .report import format_text, write_json

    click.echo(format_text(result))
    if json_out:
        try:
            write_json(result, json_out)
        except OSError as exc:
            _fail(f"cannot write --json {json_out}: {exc.strerror or exc}")
    if plot_out and result.amp is not None:
        from .plot import PlotUnavailable, write_plot

        try:
            write_plot(result, plot_out)
        except PlotUnavailable as exc:
            click.echo(f"amplint verify: {exc}", err=True)
        except OSError as exc:
            _fail(f"cannot write --plot {plot_out}: {exc.strerror or exc}")
    sys.exit(result.exit_code)


def _output_onto_input(script: str | None, args: list[str], json_out: str | None, plot_out: str | None) -> str:
    """Why --json or --plot must not be written where it points (the script, a file named in
    its arguments, or the other output), or ""."""
    from amplint.overwrite_guard import overwrite_refusal, overwritten_input

    inputs = [script] if script else []
    for arg in args:
        # `--data=train.csv` names a file as surely as `--data train.csv`
        value = arg.partition("=")[2] if arg.startswith("-") and "=" in arg else arg
        if value and os.path.exists(value):
            inputs.append(value)
    for option, path in (("--json", json_out), ("--plot", plot_out)):
        problem = path and overwrite_refusal(f"{option} {path}", path, inputs)
        if problem:
            return problem
    if json_out and plot_out and overwritten_input(plot_out, [json_out]) is not None:
        return f"--plot {plot_out} is also the --json path; refusing to write both to one file"
    return ""


def _unwritable(path: str | None) -> str:
    if not path:
        return ""
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        return f"no such directory {parent}"
    if os.path.isdir(path):
        return "it is a directory"
    if not os.access(parent, os.W_OK) and not (os.path.exists(path) and os.access(path, os.W_OK)):
        return "permission denied"
    return ""


def _fail(message: str, code: int = 2) -> None:
    click.echo(f"amplint verify: {message}", err=True)
    sys.exit(code)
