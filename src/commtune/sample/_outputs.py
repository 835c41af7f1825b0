"""What sampling hands back: the selection file of the library, an env file, PNG plots.

Every file is validated before it is moved into place (atomically); a collective whose rules
fail validation is left to the library's own decision, with a warning, rather than written
wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from commtune import native
from commtune.knobs import apply, load_catalog, selection_file_env
from commtune.mpi import Builtin, Installation, Segment, Selection, Vendor, linked_library
from commtune.sample._families import ALGORITHM
from commtune.sample._profile import FamilyCurves, PlatformProfile
from commtune.util import atomic_path, format_size, write_atomic

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass
class Outputs:
    files: dict[str, str] = field(default_factory=dict)  # what -> path
    env: dict[str, str] = field(default_factory=dict)  # variables that load the rules
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {"files": self.files, "env": self.env, "warnings": self.warnings}


def _header(profile: PlatformProfile) -> str:
    fp = profile.fingerprint
    return (
        f"commtune platform {fp.key}: {fp.mpi_vendor} {fp.mpi_version} ({fp.mpi_device}), "
        f"{fp.cpu_model}, {fp.cores} cores\n"
        f"sampled with {profile.ranks} ranks ({'quick' if profile.quick else 'full'})"
    )


def builtin_selection(installation: Installation) -> Builtin | None:
    """What the library's selection file must extend (None: it starts empty), read from the
    library the sampler links."""
    if not installation.impl.selection_extends_builtin:
        return None
    binary = native.build(installation, "bench/ct_sample.c")
    return installation.impl.builtin_selection(linked_library(binary))


def selection_file(
    profile: PlatformProfile, segs: dict[str, list[Segment]], builtin: Builtin | None = None
) -> Selection:
    """The library's selection file for ``segs`` (collective -> ranges), validated;
    collectives that cannot be expressed are dropped with a warning."""
    algorithms = {f.op: f.values for f in profile.families if f.name == ALGORITHM}
    return Vendor(profile.vendor).impl.write_selection(
        segs, {op: algorithms[op] for op in segs}, profile.ranks, _header(profile), builtin
    )


def write_outputs(
    profile: PlatformProfile,
    directory: Path,
    builtin: Builtin | None = None,
    plots: bool = True,
) -> Outputs:
    directory.mkdir(parents=True, exist_ok=True)
    out = Outputs()
    vendor = profile.vendor
    segs = profile.algorithm_segments()
    segs = {op: s for op, s in segs.items() if s}
    if segs:
        selection = selection_file(profile, segs, builtin)
        out.warnings = list(selection.warnings)
        path = directory / f"{vendor}-{Vendor(vendor).impl.selection_file_name}"
        write_atomic(str(path), selection.text)
        out.files["rules"] = str(path.resolve())
        out.env = selection_file_env(Vendor(vendor).impl, out.files["rules"])
    catalog = load_catalog(vendor)
    config = profile.config()
    knobs = [catalog[k] for k in config]
    env = {**apply(knobs, config, Vendor(vendor).impl).env, **out.env}
    lines = [f"# {line}" for line in _header(profile).splitlines()]
    lines += [f"export {k}={v}" for k, v in env.items()]
    env_path = directory / f"{vendor}-platform.env"
    write_atomic(str(env_path), "\n".join(lines) + "\n")
    out.files["env"] = str(env_path.resolve())
    if plots:
        for fam in profile.families:
            if len(fam.curves) >= 1:
                png = directory / f"{vendor}-{fam.op}-{fam.name}.png"
                plot_family(fam, profile, png)
                out.files[f"plot:{fam.key}"] = str(png.resolve())
    return out


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
