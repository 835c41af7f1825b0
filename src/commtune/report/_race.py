"""What ``commtune race`` draws: each candidate's call times by block beside the reference's,
and its estimate with the interval the test gives."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from commtune.tune import Race, Raced


def race_plot(race: Race, raced: Sequence[Raced], path: Path, warmup: int) -> None:
    """Top: per block (in order, every size), each candidate's time a call, a running
    median of 25 blocks so that a drift shows; bottom: each candidate's speedup a call over
    the reference with its interval, the 1.0 line and the claim's bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    blocks = race.blocks(warmup)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6.5),
                                      gridspec_kw={"height_ratios": [3, 2]})  # fmt: skip
    width = min(25, max(1, len(blocks) // 10))
    for j, name in enumerate(race.names):
        t = blocks[:, j] * 1e6 if len(blocks) else np.zeros(0)
        smooth = [float(np.median(t[max(0, i - width + 1) : i + 1])) for i in range(len(t))]
        top.plot(smooth, linewidth=1.6 if j == 0 else 1.0, color="black" if j == 0 else None,
                 label=f"{name}{' (reference)' if j == 0 else ''}")  # fmt: skip
    top.set_xlabel(f"block (each candidate once, order drawn; running median of {width})")
    top.set_ylabel("time a call, slowest rank (us)")
    top.legend(fontsize=7, ncol=2)
    top.set_title(f"{race.op}: {len(race.time)} calls raced in one run", fontsize=10)
    names = [r.name for r in raced]
    y = np.arange(len(raced))
    speed = [r.test.speedup for r in raced]
    low = [r.test.speedup - r.test.interval[0] for r in raced]
    high = [r.test.interval[1] - r.test.speedup for r in raced]
    colors = ["C2" if r.test.passed else "C7" for r in raced]
    bottom.errorbar(speed, y, xerr=[low, high], fmt="none", ecolor=colors)
    bottom.scatter(speed, y, c=colors, zorder=3)
    bottom.axvline(1.0, color="black", linewidth=1)
    bottom.set_yticks(y, names, fontsize=8)
    bottom.set_xlabel("speedup a call over the reference (90 % interval; green: proven faster)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
