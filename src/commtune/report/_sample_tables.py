"""Terminal tables of ``commtune sample``: choices per size range, files, predictions, checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.table import Table

from commtune.util import format_size

if TYPE_CHECKING:
    from commtune.sample import Check, SampleResult, SimSample, ThresholdCheck


def _time(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:.3g} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.3g} µs"
    return f"{ns:.3g} ns"


def sample_tables(result: SampleResult) -> list[Table]:
    profile = result.profile
    fp = profile.fingerprint
    head = Table(
        title=f"platform {fp.key}: {fp.mpi_vendor} {fp.mpi_version} ({fp.mpi_device}), "
        f"{profile.ranks} ranks, {'quick' if profile.quick else 'full'} sample"
        f"{' (stored, reused)' if result.reused else f' in {profile.wall_seconds:.0f} s'}"
    )
    for column in ("operation", "from", "to", "method", "vs default at midpoint"):
        head.add_column(column)
    for fam in profile.families:
        segs = fam.segments(profile.vendor)
        default = fam.curves.get(fam.default)
        for seg in segs:
            mid = seg.low * 2 if seg.high is None else (max(seg.low, 1) * seg.high) ** 0.5
            gain = ""
            if default is not None and seg.method in fam.curves:
                ratio = default.predict(mid) / fam.curves[seg.method].predict(mid)
                gain = f"{ratio:.2f}x"
            head.add_row(
                f"{fam.op} ({fam.name})",
                format_size(seg.low),
                format_size(seg.high),
                seg.method,
                gain,
            )
        for method, reason in fam.failed.items():
            head.add_row(f"{fam.op} ({fam.name})", "", "", f"[red]{method} failed[/red]", reason)
    tables = [head]
    config = profile.config()
    files = Table(title="configuration and files")
    files.add_column("what")
    files.add_column("value")
    threshold = profile.eager_threshold()
    if threshold is not None:
        files.add_row("eager/rendezvous threshold", format_size(threshold))
    block = profile.iov_threshold()
    if block is not None:
        files.add_row("pack/iovec threshold (block length)", format_size(block))
    aggregated = profile.aggregation_limit()
    if aggregated is not None:
        files.add_row("aggregate messages below", format_size(aggregated))
    for knob, value in config.items():
        files.add_row(knob, str(value))
    for what, path in result.outputs.files.items():
        files.add_row(what, path)
    files.add_row("study (commtune run --study / export)", result.study)
    tables.append(files)
    return tables


def predict_table(rows: Sequence[dict[str, Any]], size: int) -> Table:
    table = Table(title=f"predicted time at {format_size(size)} (log-log interpolation)")
    for column in ("operation", "chosen", "time", "other methods"):
        table.add_column(column)
    for row in rows:
        others = ", ".join(
            f"{m} {_time(t)}" for m, t in row["methods"].items() if m != row["chosen"]
        )
        table.add_row(
            f"{row['op']} ({row['family']})", row["chosen"], _time(row["time_ns"]), others
        )
    return table


def checks_table(checks: Sequence[Check]) -> Table:
    table = Table(title="selection file vs forced choice (medians of alternating launches)")
    for column in ("operation", "size", "chosen", "with file", "forced", "ratio", "vs best"):
        table.add_column(column)
    for c in checks:
        colour = "green" if c.ratio <= 1.1 else "yellow"
        table.add_row(
            c.op,
            format_size(c.size),
            c.method,
            _time(c.with_file),
            _time(c.forced),
            f"[{colour}]{c.ratio:.3f}[/{colour}]",
            f"{c.vs_best:.3f}",
        )
    return table


def thresholds_table(checks: Sequence[ThresholdCheck]) -> Table:
    table = Table(title="sampled thresholds vs the library's (medians of interleaved runs)")
    for column in ("knob: library's -> sampled", "size", "library's", "sampled", "ratio"):
        table.add_column(column)
    shown = None
    for c in checks:
        colour = "green" if c.ratio < 0.95 else "red" if c.ratio > 1.05 else "white"
        title = f"{c.op}: {c.knob}: {c.default} -> {c.sampled}"
        table.add_row(
            title if title != shown else "",
            format_size(c.size),
            _time(c.default_ns),
            _time(c.sampled_ns),
            f"[{colour}]{c.ratio:.3f}[/{colour}]",
        )
        shown = title
    return table


def simulated_sample_tables(sample: SimSample) -> list[Table]:
    """Per real library: its chosen algorithm per size range at each rank count, and the
    collective time saved against its own decision (SMPI's port of it), per size."""
    tables = []
    saved: dict[tuple[str, int, str, int], Any] = {
        (s.target, s.ranks, s.op, s.size): s for s in sample.savings
    }
    for vendor, per_ranks in sample.choices.items():
        table = Table(title=f"{vendor}'s algorithms on {sample.cluster}: the best per size, "
                      "and the time saved against its own decision (simulated)")  # fmt: skip
        for column in ("ranks", "collective", "from", "to", "algorithm", "saved (per size)"):
            table.add_column(column)
        for ranks, by_op in per_ranks.items():
            for op, segs in by_op.items():
                for seg in segs:
                    sizes = sorted(
                        size
                        for (v, n, o, size) in saved
                        if (v, n, o) == (vendor, ranks, op)
                        and seg.low <= size
                        and (seg.high is None or size < seg.high)
                    )
                    shown = ", ".join(
                        f"{format_size(z)} {saved[(vendor, ranks, op, z)].saved:+.0%}"
                        for z in sizes
                    )  # fmt: skip
                    table.add_row(str(ranks), op, format_size(seg.low), format_size(seg.high),
                                  seg.method, shown)  # fmt: skip
        tables.append(table)
    return tables
