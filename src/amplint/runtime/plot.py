"""``--plot``: AMP vs FP32 loss curves and the loss-scale history (matplotlib, optional extra)."""

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


def write_plot(result: Any, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display in CI
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise PlotUnavailable("--plot needs matplotlib: pip install 'amplint[plot]'") from exc

    amp, ref = result.amp, result.reference
    fig, (ax_loss, ax_scale) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True)
    if ref is not None and ref.steps:
        ax_loss.plot([s.index for s in ref.steps], [s.loss for s in ref.steps], label="FP32 reference", color="tab:gray")
    if amp is not None and amp.steps:
        xs = [s.index for s in amp.steps]
        ax_loss.plot(xs, [s.loss for s in amp.steps], label="AMP", color="tab:blue")
        skipped = [s for s in amp.steps if not s.applied]
        if skipped:
            ax_loss.scatter([s.index for s in skipped], [s.loss for s in skipped], marker="x", color="tab:red",
                            label="skipped step", zorder=3)
        scales = [(s.index, s.scale_after if s.scale_after is not None else s.scale_before) for s in amp.steps]
        scales = [(i, v) for i, v in scales if v is not None]
        if scales:
            ax_scale.step([i for i, _ in scales], [v for _, v in scales], where="post", color="tab:orange")
            ax_scale.set_yscale("log", base=2)
        else:
            ax_scale.text(0.5, 0.5, "no enabled GradScaler", ha="center", va="center", transform=ax_scale.transAxes)
    ax_loss.set_ylabel("loss")
    ax_loss.set_title(plot_title(result))
    ax_loss.legend()
    ax_loss.grid(alpha=0.3)
    ax_scale.set_ylabel("loss scale (after update)")
    ax_scale.set_xlabel("optimizer step")
    ax_scale.grid(alpha=0.3)
    fig.tight_layout()
    # The format passed, not guessed: without it, a path with no suffix would be saved as PATH.png.
    fig.savefig(path, dpi=100, format=plot_format(path))
    plt.close(fig)
