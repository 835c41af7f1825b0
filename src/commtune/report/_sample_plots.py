"""The platform sample's figures: each family's curves, with the chosen ranges, as PNG files
beside the selection file (``commtune sample``) and in the study report. Sampling hands the
curves over as data; only this module draws them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from commtune.util import atomic_path, format_size

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from commtune.sample import FamilyCurves, PlatformProfile


def sample_plots(profile: PlatformProfile, directory: Path) -> dict[str, str]:
    """One PNG per sampled family in ``directory``: ``plot:<op>/<family>`` -> its path."""
    files = {}
    for fam in profile.families:
        if len(fam.curves) >= 1:
            png = directory / f"{profile.vendor}-{fam.op}-{fam.name}.png"
            plot_family(fam, profile, png)
            files[f"plot:{fam.key}"] = str(png.resolve())
    return files


def plot_family(fam: FamilyCurves, profile: PlatformProfile, path: Path) -> None:
    """:func:`family_figure` as a PNG file."""
    import matplotlib.pyplot as plt

    fig = family_figure(fam, profile)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)


def family_figure(fam: FamilyCurves, profile: PlatformProfile) -> Figure:
    """Time against size (log-log) for every method, the chosen ranges shaded below and the
    thresholds between them as vertical lines; a second panel: each curve relative to the
    fastest at each size, which is where the crossings are easy to see."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(8, 7), sharex=True, gridspec_kw={"height_ratios": [3, 2]}
    )
    best: dict[int, float] = {}
    for c in fam.curves.values():
        for s, t in zip(c.sizes, c.times, strict=True):
            best[s] = min(best.get(s, float("inf")), t)
    for method, c in sorted(fam.curves.items()):
        style = "--" if method == fam.default else "-"
        (line,) = top.plot(c.sizes, [t / 1e3 for t in c.times], style, marker=".", label=method)
        if c.q1 and c.q3:
            top.fill_between(
                c.sizes, [t / 1e3 for t in c.q1], [t / 1e3 for t in c.q3], alpha=0.15,
                color=line.get_color(),
            )  # fmt: skip
        bottom.plot(c.sizes, [t / best[s] for s, t in zip(c.sizes, c.times, strict=True)],
                    style, marker=".", color=line.get_color())  # fmt: skip
    for seg in fam.segments(profile.vendor)[1:]:
        for ax in (top, bottom):
            ax.axvline(seg.low, color="black", linewidth=0.8, linestyle=":")
        top.annotate(
            f"{format_size(seg.low)}\n→ {seg.method}",
            (seg.low, top.get_ylim()[1]),
            textcoords="offset points",
            xytext=(3, -24),
            fontsize=7,
        )
    top.set_xscale("log", base=2)
    top.set_yscale("log")
    top.set_ylabel("time per operation (µs)")
    top.legend(fontsize=7, ncol=2)
    top.set_title(
        f"{fam.op} — {fam.name} ({profile.fingerprint.mpi_vendor} "
        f"{profile.fingerprint.mpi_version}, {profile.ranks} ranks)"
    )
    bottom.set_yscale("log")
    bottom.set_ylabel("time / fastest")
    bottom.set_xlabel("message size (bytes)")
    bottom.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig
