"""``--plot``: AMP vs FP32 loss curves and the loss-scale history (matplotlib, optional extra)."""

from __future__ import annotations

from typing import Any


class PlotUnavailable(RuntimeError):
    pass


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
    fig.savefig(path, dpi=100)
    plt.close(fig)
