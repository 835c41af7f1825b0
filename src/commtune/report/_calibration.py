"""What ``commtune calibrate`` shows: the calibrated links and thresholds, the agreement of
the simulation with the measurement per size segment, and a plot of both curves."""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from commtune.util import atomic_path, format_size

if TYPE_CHECKING:
    from commtune.sample import CalibrationResult

# size bands of the agreement table: a factor of 16 each
BAND = 16


def calibration_table(result: CalibrationResult) -> Table:
    """Measured and simulated one-way time per size band, between two nodes and within one,
    with the ratio's median and its range (what the agreement figure is made of)."""
    table = Table(title="one-way time, measured on the machine and simulated on the "
                  "calibrated platform (medians per size band)")  # fmt: skip
    for column in ("where", "sizes", "n", "measured", "simulated", "ratio", "ratio range"):
        table.add_column(column, justify="left" if column in ("where", "sizes") else "right")
    curves = [("2 nodes", result.between.medians("pingpong"), result.simulated)]
    if result.within is not None and result.simulated_within is not None:
        curves.append(("1 node", result.within.medians("pingpong"), result.simulated_within))
    for where, measured, simulated in curves:
        bands: dict[int, list[int]] = {}
        for size in sorted(s for s in measured if s in simulated):
            bands.setdefault(int(math.log(max(size, 1), BAND)), []).append(size)
        for band, sizes in bands.items():
            ratios = [simulated[s] / measured[s] for s in sizes]
            table.add_row(
                where, f"{format_size(BAND**band)}-{format_size(BAND ** (band + 1))}",
                str(len(sizes)), _time(statistics.median(measured[s] for s in sizes)),
                _time(statistics.median(simulated[s] for s in sizes)),
                f"{statistics.median(ratios):.2f}", f"{min(ratios):.2f}-{max(ratios):.2f}",
            )  # fmt: skip
    return table


def calibration_lines(result: CalibrationResult) -> list[str]:
    """The calibration in a few lines: links, compute, thresholds, agreement."""
    c = result.calibration
    pairs = result.between.pairs
    lines = [
        "measured between two nodes"
        + (f", {pairs - 1} more pair(s) of nodes doing the same beside" if pairs > 1 else ""),
        f"link: {c.link_bandwidth * 8 / 1e9:.3g} Gbit/s, {c.link_latency * 1e6:.3g} us a link "
        f"(2 links between two nodes); node: {c.speed / 1e9:.3g} Gflop/s a core "
        f"(this machine: {c.host_speed / 1e9:.3g})",
        f"eager below {format_size(c.detached)}; a receive finds the message there below "
        f"{format_size(c.async_small) if c.async_small else 'no size'}",
    ]
    if c.loopback_bandwidth is not None and c.loopback_latency is not None:
        lines.append(f"within a node: {c.loopback_bandwidth * 8 / 1e9:.3g} Gbit/s, "
                     f"{c.loopback_latency * 1e6:.3g} us")  # fmt: skip
    for where, agreement in (
        ("2 nodes, the sizes fitted (in sample)", result.agreement),
        ("1 node, in sample", result.agreement_within),
        ("2 nodes, held out (a fresh launch, sizes not fitted)", result.held_out),
        (
            "the same held-out runs, the simulator's own factors on these links",
            result.held_out_plain,
        ),
    ):
        if agreement is not None:
            lines.append(
                f"simulated over measured, {where}: median {agreement.median:.2f}, "
                f"{agreement.within(0.8, 1.25):.0%} of {len(agreement.ratios)} sizes within "
                f"0.8-1.25, {agreement.within(0.5, 2.0):.0%} within 0.5-2"
            )
    if result.ordering is not None:
        lines += result.ordering.lines()
    return lines


def _time(seconds: float) -> str:
    return f"{seconds * 1e6:.3g} us" if seconds < 1e-3 else f"{seconds * 1e3:.3g} ms"


def calibration_plot(result: CalibrationResult, path: Path) -> None:
    """Measured (points) and simulated (lines) one-way time against size, log-log, between
    two nodes and within one; below, the ratio of the two with the 0.8-1.25 band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7), sharex=True,
                                      gridspec_kw={"height_ratios": [2, 1]})  # fmt: skip
    curves = [("2 nodes", result.between.medians("pingpong"), result.simulated, "C0")]
    if result.within is not None and result.simulated_within is not None:
        curves.append(("1 node", result.within.medians("pingpong"), result.simulated_within,
                       "C1"))  # fmt: skip
    for label, measured, simulated, color in curves:
        sizes = sorted(s for s in measured if s in simulated)
        top.scatter(sizes, [measured[s] for s in sizes], s=10, color=color,
                    label=f"{label}: measured (median)")  # fmt: skip
        top.plot(sizes, [simulated[s] for s in sizes], color=color,
                 label=f"{label}: simulated")  # fmt: skip
        bottom.scatter(sizes, [simulated[s] / measured[s] for s in sizes], s=10, color=color)
    bottom.axhspan(0.8, 1.25, color="0.85", zorder=0)
    bottom.axhline(1.0, color="0.4", linewidth=0.8)
    for ax in (top, bottom):
        ax.set_xscale("log")
    top.set_yscale("log")
    bottom.set_yscale("log", base=2)
    top.set_ylabel("one-way time (s)")
    bottom.set_ylabel("simulated / measured")
    bottom.set_xlabel("message size (bytes)")
    top.legend(fontsize=8)
    fig.suptitle(f"calibration of {result.installation}", fontsize=10)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
