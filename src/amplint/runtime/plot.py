"""``--plot``: AMP vs FP32 loss curves, where each broke, the loss-scale history, the verdict
and its reason, and the evaluation's decisions when there is one (matplotlib, optional extra)."""

from __future__ import annotations

import os
from typing import Any


class PlotUnavailable(RuntimeError):
    pass


# What matplotlib's savefig writes in every release amplint[plot] allows (3.7 on): the formats
# accepted when matplotlib is not installed, to refuse a mistyped suffix all the same.
KNOWN_FORMATS = ("eps", "jpeg", "jpg", "pdf", "pgf", "png", "ps", "raw", "rgba", "svg", "svgz", "tif", "tiff", "webp")


def plot_format(path: str) -> str:
    """The format ``path``'s suffix asks for (png when it has none); ValueError if matplotlib cannot write it.

    Checked before the runs: matplotlib would refuse the suffix only after them.
    """
    suffix = os.path.splitext(os.path.basename(path))[1][1:].lower()
    if not suffix:
        return "png"
    try:
        from matplotlib.backend_bases import FigureCanvasBase

        supported = sorted(FigureCanvasBase.get_supported_filetypes())
    except ImportError:
        supported = list(KNOWN_FORMATS)
    if suffix not in supported:
        raise ValueError(f"matplotlib cannot write .{suffix} files; use one of {', '.join(supported)}")
    return suffix


def plot_title(result: Any) -> str:
    from .report import verdict_word

    return f"amplint verify {result.target}: {verdict_word(result)}"


def plot_heading(result: Any, width: int = 95) -> str:
    """The title: the verdict (with its runtime findings) and, below it, the verdict's reason."""
    import textwrap

    from .report import verdict_reason, with_findings

    reason = textwrap.fill(verdict_reason(result), width)
    return f"{plot_title(result)}{with_findings(result)}\n{reason}"


# the reference is drawn over the AMP run, dashed with hollow markers, so that two curves that
# agree show both (a solid AMP line under a dashed reference) instead of one hiding the other
_STYLES = {
    "amp": {"label": "AMP", "color": "tab:blue", "linestyle": "-", "linewidth": 2.0, "marker": ".",
            "markersize": 4, "zorder": 2},
    "reference": {"label": "FP32 reference", "color": "black", "linestyle": "--", "linewidth": 1.2,
                  "marker": "o", "markersize": 4, "markerfacecolor": "none", "zorder": 3},
}


def _finite_points(steps: list[Any]) -> tuple[list[int], list[float]]:
    import math

    pts = [(s.index, s.loss) for s in steps if s.loss is not None and math.isfinite(s.loss)]
    return [i for i, _ in pts], [v for _, v in pts]


def build_figure(result: Any) -> Any:
    """The matplotlib figure of ``write_plot`` (raises ImportError without matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")  # no display in CI
    import matplotlib.pyplot as plt

    from .criteria import first_nonfinite

    amp, ref = result.amp, result.reference
    evaluation = getattr(result, "evaluation", None)
    panels = 3 if evaluation is not None else 2
    fig, axes = plt.subplots(panels, 1, figsize=(9, 3.2 * panels + 0.8),
                             gridspec_kw={"height_ratios": [3, 2, 2][:panels]})
    ax_loss, ax_scale = axes[0], axes[1]
    ax_scale.sharex(ax_loss)
    drawn: list[float] = []
    for side, run in (("amp", amp), ("reference", ref)):
        if run is None or not run.steps:
            continue
        xs, ys = _finite_points(run.steps)
        ax_loss.plot(xs, ys, **_STYLES[side])
        drawn += ys
        bad = first_nonfinite(run.steps)
        if bad is not None:
            color = _STYLES[side]["color"]
            ax_loss.axvline(bad, color=color, linestyle=":", linewidth=1.5, zorder=1,
                            label=f"{_STYLES[side]['label']}: loss non-finite from step {bad}")
    if amp is not None and amp.steps:
        import math

        skipped = [s for s in amp.steps if not s.applied and s.loss is not None and math.isfinite(s.loss)]
        if skipped:
            ax_loss.scatter([s.index for s in skipped], [s.loss for s in skipped], marker="x", color="tab:red",
                            label="AMP skipped step", zorder=4)
        scales = [(s.index, s.scale_after if s.scale_after is not None else s.scale_before) for s in amp.steps]
        scales = [(i, v) for i, v in scales if v is not None]
        if scales:
            ax_scale.step([i for i, _ in scales], [v for _, v in scales], where="post", color="tab:orange")
            ax_scale.set_yscale("log", base=2)
        else:
            ax_scale.text(0.5, 0.5, "no enabled GradScaler", ha="center", va="center", transform=ax_scale.transAxes)
    elif amp is not None:
        ax_loss.text(0.5, 0.5, "the AMP run recorded no step", ha="center", va="center", transform=ax_loss.transAxes)
    positive = [v for v in drawn if v > 0]
    if positive and len(positive) == len(drawn) and max(positive) / min(positive) > 1e3:
        ax_loss.set_yscale("log")  # a diverging run would flatten every other curve to a line
    ax_loss.set_ylabel("loss")
    ax_loss.set_title(plot_heading(result), fontsize=9, loc="left")
    if ax_loss.get_legend_handles_labels()[0]:
        ax_loss.legend(fontsize=8)
    ax_loss.grid(alpha=0.3)
    ax_scale.set_ylabel("loss scale (after update)")
    ax_scale.set_xlabel("optimizer step (from 0)")
    ax_scale.grid(alpha=0.3)
    if evaluation is not None:
        from .decisions import draw_evaluation

        draw_evaluation(axes[2], evaluation)
    fig.tight_layout()
    return fig


def write_plot(result: Any, path: str) -> None:
    try:
        import matplotlib.pyplot as plt

        fig = build_figure(result)
    except ImportError as exc:
        raise PlotUnavailable("--plot needs matplotlib: pip install 'amplint[plot]'") from exc
    # The format passed, not guessed: without it, a path with no suffix would be saved as PATH.png.
    try:
        fig.savefig(path, dpi=100, format=plot_format(path))
    finally:
        plt.close(fig)
