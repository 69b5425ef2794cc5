"""The click command behind ``amplint verify`` (registered lazily by amplint.cli)."""

from __future__ import annotations

import sys

import click

_HELP = """Run SCRIPT (or -m MODULE) with AMP for --steps optimizer steps and judge whether it
trains, against an FP32 reference of the same script.

Arguments after `--` are passed to the script (so are options verify does not know).
Exit 0 trains, 1 criteria failed, 2 could not run."""


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
@click.option("--json", "json_out", type=click.Path(dir_okay=False, writable=True), help="Write the report as JSON.")
@click.option("--plot", "plot_out", type=click.Path(dir_okay=False, writable=True), help="Write loss and scale curves as PNG.")
@click.option("--progress/--no-progress", default=None, help="Progress bar on stderr (default: when stderr is a terminal).")
@click.argument("script_and_args", nargs=-1, type=click.UNPROCESSED, metavar="SCRIPT [-- SCRIPT_ARGS...]")
def verify_command(module, steps, device, dtype, baseline, rtol, max_skipped_frac, seed, nproc_per_node,
                   json_out, plot_out, progress, script_and_args):
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

    try:
        from .api import verify
    except ImportError as exc:  # torch missing: the runtime extra is not installed
        click.echo(f"amplint verify needs torch: pip install 'amplint[runtime]' ({exc})", err=True)
        sys.exit(2)
    try:
        import torch  # noqa: F401
    except ImportError:
        click.echo("amplint verify needs torch: pip install 'amplint[runtime]'", err=True)
        sys.exit(2)

    result = verify(
        script, args, module=module, steps=steps, device=device, dtype=dtype, baseline=baseline, rtol=rtol,
        max_skipped_frac=max_skipped_frac, seed=seed, nproc_per_node=nproc_per_node, progress=progress,
        announce=lambda line: click.echo(line),
    )
    from .report import format_text, write_json

    click.echo(format_text(result))
    if json_out:
        write_json(result, json_out)
    if plot_out and result.amp is not None:
        from .plot import PlotUnavailable, write_plot

        try:
            write_plot(result, plot_out)
        except PlotUnavailable as exc:
            click.echo(f"amplint verify: {exc}", err=True)
    sys.exit(result.exit_code)
