"""Terminal tables of ``commtune train`` and ``commtune predict``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
from rich.table import Table

from commtune.knobs import Space, Value
from commtune.predict import PEARSON_MIN

if TYPE_CHECKING:
    from commtune.predict import TrainReport


def train_tables(report: TrainReport) -> list[Table]:
    pearson = Table(title="knob selection: |Pearson r| with time relative to the defaults")
    for col in ("knob (value: one-hot)", "r", "knob kept"):
        pearson.add_column(col, justify="right" if col == "r" else "left")
    for knob, column, r in sorted(report.pearson, key=lambda row: -abs(row[2])):
        kept = "yes" if knob in report.selected else ""
        style = "bold" if abs(r) > PEARSON_MIN else "dim"
        pearson.add_row(column, f"[{style}]{r:+.3f}[/{style}]", kept)
    cv = Table(title="leave-one-point-out: share of the best measured speedup reached")
    for col in ("model", "mean", "median", "worst", "chosen"):
        cv.add_column(col, justify="left" if col == "model" else "right")
    for kind, shares in report.cv.items():
        cv.add_row(
            kind,
            f"{100 * np.mean(shares):.1f} %",
            f"{100 * np.median(shares):.1f} %",
            f"{100 * np.min(shares):.1f} %",
            "yes" if kind == report.winner else "",
        )
    return [pearson, cv]


def prediction_table(
    space: Space, features: Mapping[str, float], config: Mapping[str, Value]
) -> Table:
    table = Table(title="predicted configuration")
    table.add_column("knob")
    table.add_column("library default", justify="right")
    table.add_column("predicted", justify="right")
    for d in space.dimensions:
        knob = d.knob
        table.add_row(knob.name, knob.format(knob.default), knob.format(config[knob.name]))
    table.caption = "features: " + ", ".join(f"{k}={v:.3g}" for k, v in features.items())
    return table
