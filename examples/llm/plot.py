"""The loss-curve plot (matplotlib, optional): used by training and the PyTorch reference."""

import sys

import numpy as np


def plot_losses(rows, png, title="", others=None):
    """Training loss (and validation loss) against the step, as a PNG. `others` maps a
    label to more rows to overlay (e.g. the PyTorch reference). None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(
            "[plot] matplotlib is missing (no loss plot); install it with:  .venv/bin/python -m pip install matplotlib",
            file=sys.stderr,
        )
        return None
    fig, ax = plt.subplots(figsize=(7, 4.2))
    series = {"kiln": rows, **(others or {})}
    for i, (label, rs) in enumerate(series.items()):
        steps = [int(r["step"]) for r in rs]
        loss = [float(r["loss"]) for r in rs]
        color = f"C{i}"
        ax.plot(steps, loss, color=color, alpha=0.35, lw=0.8)
        if len(loss) >= 10:
            k = max(1, len(loss) // 50)
            smooth = np.convolve(loss, np.ones(k) / k, mode="valid")
            ax.plot(steps[k - 1 :], smooth, color=color, lw=1.5, label=f"{label} train")
        vs = [
            (int(r["step"]), float(r["val_loss"]))
            for r in rs
            if r.get("val_loss") not in ("", None)
        ]
        if vs:
            ax.plot(*zip(*vs), "o--", color=color, ms=4, label=f"{label} validation")
    ax.set_xlabel("step")
    ax.set_ylabel("cross entropy (nats / token)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png
