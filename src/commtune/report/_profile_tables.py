"""Terminal tables for a libcommtune profile and for the MPI_T variable listing."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich.table import Table

from commtune.profile import Profile
from commtune.util import format_size


def _seconds(value: float) -> str:
    if value >= 1:
        return f"{value:.3f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.3f} ms"
    return f"{value * 1e6:.1f} us"


def summary_table(profile: Profile) -> Table:
    data = profile.data
    table = Table(title=f"profile: {profile.ranks} ranks, {data.get('library', '')}")
    table.add_column("", style="bold")
    table.add_column("mean", justify="right")
    table.add_column("min", justify="right")
    table.add_column("max", justify="right")
    for key, label in (
        ("wall_time", "wall time"),
        ("mpi_time", "time in MPI"),
        ("comm_time", "communication"),
    ):
        s = data[key]
        table.add_row(label, _seconds(s["mean"]), _seconds(s["min"]), _seconds(s["max"]))
    return table


def operations_table(profile: Profile, limit: int = 12) -> Table:
    table = Table(title="operations by time (sum over ranks)")
    for name, justify in (
        ("operation", "left"),
        ("class", "left"),
        ("calls", "right"),
        ("bytes", "right"),
        ("time", "right"),
        ("max rank", "right"),
        ("sizes", "left"),
    ):
        table.add_column(name, justify=justify, no_wrap=name == "operation")  # type: ignore[arg-type]
    for name, op in profile.top_operations(limit):
        sizes = ", ".join(
            f"{format_size(s['min'])}..: {s['calls']}"
            for s in sorted(op["sizes"], key=lambda s: -s["calls"])[:3]
        )
        table.add_row(
            name,
            op["class"],
            f"{op['calls']['sum']:.0f}",
            format_size(op["bytes"]["sum"]),
            _seconds(op["time"]["sum"]),
            _seconds(op["time"]["max"]),
            sizes,
        )
    return table


def features_table(profile: Profile) -> Table:
    table = Table(title="features (Wang et al.)")
    table.add_column("feature")
    table.add_column("value", justify="right")
    for name, value in profile.features.items():
        shown = format_size(value) if name.endswith("bytes") else f"{value:.4g}"
        table.add_row(name, shown)
    return table


def cvars_table(profile: Profile) -> Table:
    table = Table(title="control variables read back after MPI_Init")
    for name in ("variable", "intended", "actual", "status", "MPI_T write"):
        table.add_column(name, overflow="fold")
    for c in profile.cvars:
        style = "green" if c.applied else "red"
        table.add_row(
            c.name, c.intended, c.actual or "", f"[{style}]{c.status}[/{style}]", c.write or ""
        )
    return table


def variables_table(title: str, rows: Iterable[Mapping[str, Any]], limit: int = 40) -> Table:
    """PVAR or user-variable statistics, like TAU's table."""
    table = Table(title=title)
    for name in ("variable", "class", "samples", "min", "max", "mean", "std dev"):
        table.add_column(name, justify="left" if name in ("variable", "class") else "right")
    for row in list(rows)[:limit]:
        table.add_row(
            row["name"],
            row.get("class", "user"),
            f"{row['samples']:.0f}",
            *(f"{row[k]:.6g}" for k in ("min", "max", "mean", "std")),
        )
    return table


def mpit_table(rows: Iterable[Mapping[str, Any]], pvars: bool) -> Table:
    """``commtune cvars``: every MPI_T variable with type, scope or class, values, description."""
    table = Table(title="MPI_T performance variables" if pvars else "MPI_T control variables")
    columns = (
        ("name", "class", "type", "bind", "description")
        if pvars
        else ("name", "type", "scope", "value", "enum values", "description")
    )
    for name in columns:
        table.add_column(name, overflow="fold", no_wrap=name == "name")
    for row in rows:
        if pvars:
            table.add_row(
                row["name"], row["class"], row["datatype"], row["bind"], row["description"]
            )
        else:
            items = ", ".join(str(e[1]) for e in row.get("enum") or [])
            value = "" if row.get("value") is None else str(row["value"])
            table.add_row(
                row["name"], row["datatype"], row["scope"], value, items, row["description"]
            )
    return table
