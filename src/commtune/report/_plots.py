"""The report's figures, drawn with matplotlib and embedded as PNG data (no network, no files).

Every function takes plain data (:class:`commtune.report._study_data.StudyData` and its parts)
and returns ``data:image/png;base64,...`` text for an ``<img>``.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from commtune.report._study_data import StudyData

FAILED = "#c0392b"
CONTROL = "#7f8c8d"
BEST = "#2471a3"


def _figure(width: float = 8.0, height: float = 3.6, rows: int = 1) -> tuple[Figure, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # constrained: titles and labels laid out inside the figure, never cut at its edge
    return plt.subplots(rows, 1, figsize=(width, height), squeeze=rows == 1, layout="constrained")


def _log_if_wide(ax: Any, values: Sequence[float]) -> None:
    """A log axis for relative times that span more than 3x (a slow outlier would flatten
    everything near 1 on a linear one)."""
    positive = [v for v in values if v > 0]
    if positive and max(positive) / min(positive) > 3:
        from matplotlib.ticker import FuncFormatter

        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: minor_label(v)))


def minor_label(value: float) -> str:
    """A log axis's minor tick label: only at 2 and 5 times a power of ten (0.6, 0.7, 0.8
    and 0.9 printed beside each other near 1 overlap)."""
    if value <= 0:
        return ""
    mantissa = value / 10 ** math.floor(math.log10(value))
    return f"{value:g}" if round(mantissa, 6) in (2.0, 5.0) else ""


def png(fig: Figure, dpi: int = 90) -> str:
    """The figure as a data URI (and closed)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    if fig.get_layout_engine() is None:  # one not made by _figure
        fig.tight_layout()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def convergence(data: StudyData) -> str:
    """Every run's relative value and each trial's value over the trials, the best so far,
    failed trials marked on the top edge."""
    fig, ax = _figure()
    best = float("inf")
    xs, bests = [], []
    top = max([1.2, *(v for t in data.searched for v in t.relative)])
    runs_x: list[int] = []
    runs_y: list[float] = []
    values_x: list[int] = []
    values_y: list[float] = []
    failed_x: list[int] = []
    for t in data.searched:  # one scatter per kind of point: fast for long studies
        if t.failed:
            failed_x.append(t.number)
            continue
        runs_x += [t.number] * len(t.relative)
        runs_y += t.relative
        if t.value is not None:
            values_x.append(t.number)
            values_y.append(t.value)
            best = min(best, t.value)
        if best < float("inf"):
            xs.append(t.number)
            bests.append(best)
    ax.scatter(runs_x, runs_y, s=10, color="#aab7b8", zorder=2, label="runs")
    ax.scatter(values_x, values_y, s=22, color=BEST, zorder=3, label="trial values")
    if failed_x:
        ax.scatter(failed_x, [top] * len(failed_x), marker="x", color=FAILED, zorder=3,
                   label="failed / timed out")  # fmt: skip
    if xs:
        ax.step(xs, bests, where="post", color=BEST, label="best so far")
    ax.axhline(1.0, color=CONTROL, linestyle="--", linewidth=1, label="library defaults")
    _log_if_wide(ax, runs_y + values_y)
    ax.set_xlabel("trial")
    ax.set_ylabel("time relative to the defaults\n(lower is faster)")
    ax.legend(fontsize=8, loc="upper right")
    ax.set_title(f"{data.name}: search convergence", fontsize=10)
    return png(fig)


def drift(data: StudyData) -> str:
    """The raw values of the defaults' runs (reference and controls) in the order they ran."""
    fig, ax = _figure(height=3.0)
    ref = [(s, v) for s, v, kind in data.default_runs if kind == "reference"]
    ctl = [(s, v) for s, v, kind in data.default_runs if kind == "control"]
    if ref:
        ax.scatter(*zip(*ref, strict=True), color=BEST, s=18, label="reference")
    if ctl:
        ax.plot(*zip(*ctl, strict=True), marker="o", markersize=3, color=CONTROL,
                label="controls")  # fmt: skip
    ax.set_xlabel("run (in the order the study made them)")
    ax.set_ylabel(data.metric)
    ax.legend(fontsize=8)
    ax.set_title(f"the defaults over time: drift {data.drift:.2f}x", fontsize=10)
    return png(fig)


def timeline(data: StudyData) -> str:
    """A study's runs in the order it made them: the reference (the defaults), the search
    with its controls (the defaults beside it), then the verdict's pairs (the defaults and
    the configuration tested, each pair's order drawn by a coin), its looks marked."""
    return png(timeline_figure(data))


def timeline_figure(data: StudyData) -> Figure:
    fig, ax = _figure(height=3.2)
    ref = [(s, v) for s, v, kind in data.default_runs if kind == "reference"]
    ctl = [(s, v) for s, v, kind in data.default_runs if kind == "control"]
    if ref:
        ax.scatter(*zip(*ref, strict=True), color=BEST, marker="s", s=22, label="reference")
    if data.search_runs:
        ax.scatter(*zip(*data.search_runs, strict=True), color="C1", s=14, label="search")
    if ctl:
        ax.scatter(*zip(*ctl, strict=True), color=CONTROL, marker="s", s=14, label="controls")
    acc = data.acceptance
    tested = [c for c in acc.candidates
              if c.get("values") and c.get("defaults")] if acc else []  # fmt: skip
    start = 1 + max([s for s, _ in data.search_runs] + [s for s, _, _ in data.default_runs],
                    default=0)  # fmt: skip
    for k, c in enumerate(tested):
        pairs = list(zip(c["defaults"], c["values"], strict=False))
        xs = [start + 2 * i for i in range(len(pairs))]
        ax.scatter(xs, [d for d, _ in pairs], color=CONTROL, marker="s", s=14,
                   label="verdict: the defaults" if k == 0 else None)  # fmt: skip
        ax.scatter([x + 1 for x in xs], [v for _, v in pairs], color="C2", marker="D", s=16,
                   label="verdict: the configuration" if k == 0 else None)  # fmt: skip
        for n, _share in c.get("looks") or []:
            if n <= len(pairs):
                ax.axvline(start + 2 * n - 0.5, color="C2", linestyle=":", linewidth=1)
        start += 2 * len(pairs)
    ax.set_xlabel(
        "run, in the order the study made it (a verdict pair in either order, as a "
        "coin drew it, shown defaults first; dotted: the verdict's looks)",
        fontsize=8,
    )
    ax.set_ylabel(data.metric)
    ax.legend(fontsize=7, loc="upper right")
    ax.set_title(f"{data.name}: reference, search with controls, the verdict's pairs",
                 fontsize=10)  # fmt: skip
    return fig


def importance(importances: Mapping[str, float], title: str) -> str:
    return png(importance_figure(importances, title))


def importance_figure(importances: Mapping[str, float], title: str) -> Figure:
    """The knobs' importances as bars; one knob's figure is as tall as its title and axis
    need (it was 0.9 in, its title cut off at the top)."""
    fig, ax = _figure(height=max(2.0, 0.8 + 0.4 * len(importances)))
    names = list(importances)[::-1]
    ax.barh(names, [importances[n] for n in names], color=BEST)
    ax.set_xlabel("importance (PED-ANOVA, on the relative values)")
    ax.set_title(title, fontsize=10)
    return fig


def slice_plot(knob: str, points: Sequence[tuple[Any, float]]) -> str:
    """Each trial's value against the knob's value (categories in their order of first
    appearance sorted as text, numbers on a log axis where they span a decade)."""
    fig, ax = _figure(width=5.0, height=3.0)
    numeric = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x, _ in points)
    if numeric:
        ax.scatter([x for x, _ in points], [y for _, y in points], color=BEST, s=16)
        xs = [float(x) for x, _ in points]
        if min(xs) > 0 and max(xs) / min(xs) >= 10:
            ax.set_xscale("log", base=2)
    else:
        labels = sorted({str(x) for x, _ in points})
        pos = {label: i for i, label in enumerate(labels)}
        ax.scatter([pos[str(x)] for x, _ in points], [y for _, y in points], color=BEST, s=16)
        ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=7)
    ax.axhline(1.0, color=CONTROL, linestyle="--", linewidth=1)
    _log_if_wide(ax, [y for _, y in points])
    ax.set_xlabel(knob, fontsize=8)
    ax.set_ylabel("relative time")
    return png(fig)


def confirmation(default: Sequence[float], candidates: Mapping[str, Sequence[float]]) -> str:
    """Strip plot of the confirmation: the default's runs beside each candidate's."""
    import numpy as np

    fig, ax = _figure(width=6.0, height=3.2)
    groups = {"default": list(default), **{k: list(v) for k, v in candidates.items()}}
    rng = np.random.default_rng(0)
    for i, (_name, values) in enumerate(groups.items()):
        jitter = rng.uniform(-0.12, 0.12, len(values))
        ax.scatter(i + jitter, values, s=18, color=CONTROL if i == 0 else BEST, alpha=0.8)
        if values:
            ax.hlines(float(np.median(values)), i - 0.25, i + 0.25, color="black", linewidth=1.5)
    ax.set_xticks(range(len(groups)), list(groups), fontsize=8)
    ax.set_ylabel("run value")
    ax.set_title("confirmation runs (medians as bars)", fontsize=10)
    return png(fig)


def compared_convergence(studies: Sequence[StudyData]) -> str:
    """The best-so-far curves of several studies on one axis."""
    fig, ax = _figure()
    for data in studies:
        best, xs, ys = float("inf"), [], []
        values = [t.value for t in data.searched if t.value is not None]
        for i, value in enumerate(values):
            best = min(best, value)
            xs.append(i + 1)
            ys.append(best)
        if xs:
            ax.step(xs, ys, where="post", label=data.name)
    ax.axhline(1.0, color=CONTROL, linestyle="--", linewidth=1)
    ax.set_xlabel("finished search trials")
    ax.set_ylabel("best relative time so far")
    ax.legend(fontsize=8)
    ax.set_title("convergence, side by side", fontsize=10)
    return png(fig)


def scaling(rows: Sequence[Mapping[str, Any]]) -> str:
    """A program's simulated time against its ranks: the library's own decision and the
    simulation's best (a twin's scaling table), both axes logarithmic."""
    fig, ax = _figure(width=6.0, height=3.4)
    for key, label, color in (("defaults", "the library's own decision", CONTROL),
                              ("tuned", "the simulation's #1", BEST)):  # fmt: skip
        points = [(r["ranks"], r[key]) for r in rows if r.get("ranks") and r.get(key)]
        if points:
            ax.plot(*zip(*points, strict=True), marker="o", color=color, label=label)
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.set_xscale("log", base=2)
    ranks = sorted({r["ranks"] for r in rows if r.get("ranks")})
    ax.set_xticks(ranks, [str(r) for r in ranks])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: minor_label(v)))
    ax.set_xlabel("ranks (simulated, the cluster grown as much)")
    ax.set_ylabel("simulated time (s)")
    ax.legend(fontsize=8)
    ax.set_title("how the program's time grows, and what the settings buy", fontsize=10)
    return png(fig)
