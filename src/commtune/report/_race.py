"""What an in-run race draws (``commtune race --plot``, the report of a study raced in-run):
each candidate's call times by block beside the reference's, and its estimate with the
interval the test gives."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from commtune.tune import Race, Raced

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# one candidate's figures: its name, speedup a call, interval, whether it passed
Estimate = tuple[str, float, tuple[float, float], bool]


def race_plot(race: Race, raced: Sequence[Raced], path: Path, warmup: int) -> None:
    """``commtune race --plot``: :func:`race_figure` of one run, written to ``path``."""
    import matplotlib.pyplot as plt

    estimates = [(r.name, r.test.speedup, r.test.interval, r.test.passed) for r in raced]
    fig = race_figure(race.op, race.raced_calls, race.names, race.blocks(warmup), estimates)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def race_figure(op: str, calls: int, names: Sequence[str], blocks: np.ndarray,
                estimates: Sequence[Estimate]) -> Figure:  # fmt: skip
    """Top: per block (in order, every size), each candidate's time a call (``blocks``: a
    (blocks, candidates) array, the reference first), a running median of 25 blocks so that a
    drift shows; bottom: each candidate's speedup a call over the reference with its
    interval, the 1.0 line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6.5),
                                      gridspec_kw={"height_ratios": [3, 2]})  # fmt: skip
    width = min(25, max(1, len(blocks) // 10))
    for j, name in enumerate(names):
        t = blocks[:, j] * 1e6 if len(blocks) else np.zeros(0)
        windows = (t[max(0, i - width + 1) : i + 1] for i in range(len(t)))
        # NaN: a call the library ran as its own decision (refused); a window of them only
        smooth = [float(np.nanmedian(w)) if np.isfinite(w).any() else np.nan for w in windows]
        top.plot(smooth, linewidth=1.6 if j == 0 else 1.0, color="black" if j == 0 else None,
                 label=f"{name}{' (reference)' if j == 0 else ''}")  # fmt: skip
    top.set_xlabel(f"block (each candidate once, order drawn; running median of {width})")
    top.set_ylabel("time a call (us)")
    top.legend(fontsize=7, ncol=2)
    top.set_title(f"{op}: {calls} calls raced in one run", fontsize=10)
    y = np.arange(len(estimates))
    speed = [e[1] for e in estimates]
    low = [e[1] - e[2][0] for e in estimates]
    high = [e[2][1] - e[1] for e in estimates]
    colors = ["C2" if e[3] else "C7" for e in estimates]
    bottom.errorbar(speed, y, xerr=[low, high], fmt="none", ecolor=colors)
    bottom.scatter(speed, y, c=colors, zorder=3)
    bottom.axvline(1.0, color="black", linewidth=1)
    bottom.set_yticks(y, [e[0] for e in estimates], fontsize=8)
    bottom.set_xlabel("speedup a call over the reference (90 % interval; green: proven faster)")
    fig.tight_layout()
    return fig
