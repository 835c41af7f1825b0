"""The strategy race: synthetic surfaces with known optima and the driver that scores
strategies on them through the real tuning loop (``benchmarks/strategies.py``)."""

from commtune.race._run import REACHED, RaceRun, Summary, race_one, race_tuner
from commtune.race._surfaces import (
    DRIFTS,
    SYNTHETIC,
    Surface,
    SurfaceExecutor,
    cat_knob,
    held_out,
    replayed,
)

__all__ = [
    "DRIFTS",
    "REACHED",
    "SYNTHETIC",
    "RaceRun",
    "Summary",
    "Surface",
    "SurfaceExecutor",
    "cat_knob",
    "held_out",
    "race_one",
    "race_tuner",
    "replayed",
]
