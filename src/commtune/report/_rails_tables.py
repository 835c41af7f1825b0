"""Terminal table of ``commtune rails bench``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table


def rails_table(rows: Sequence[Mapping[str, Any]], rates: str, size: int, n_rails: int) -> Table:
    """``rows``: ``rails.summarize``'s records, the plan first."""
    table = Table(title=f"{size} B over {n_rails} rails ({rates} Mbit/s)")
    for column in ("split", "chunks", "predicted", "measured (median)", "meas/pred",
                   "share of aggregate bandwidth"):  # fmt: skip
        table.add_column(column)
    for row in rows:
        table.add_row(
            str(row["name"]),
            ",".join(map(str, row["chunks"])),
            f"{row['predicted_s'] * 1e3:.1f} ms",
            f"{row['measured_s'] * 1e3:.1f} ms",
            f"{row['measured_over_predicted']:.3f}",
            f"{row['aggregate_share']:.1%}",
        )
    return table
