"""The strategy harness: synthetic surfaces with known optima and recorded tables replayed,
and the driver that scores strategies on them through the real tuning loop
(``benchmarks/strategies.py``). Not a race: each strategy runs its own studies, scored
apart ("race" is the in-run race's word alone)."""

from commtune.harness._run import REACHED, StrategyRun, Summary, run_strategy, run_tuner
from commtune.harness._surfaces import (
    DRIFTS,
    SYNTHETIC,
    Surface,
    SurfaceExecutor,
    cat_knob,
    held_out,
    modes,
    out_of_sample,
    replayed,
    split_rounds,
)

__all__ = [
    "DRIFTS",
    "REACHED",
    "SYNTHETIC",
    "StrategyRun",
    "Summary",
    "Surface",
    "SurfaceExecutor",
    "cat_knob",
    "held_out",
    "modes",
    "out_of_sample",
    "replayed",
    "run_strategy",
    "run_tuner",
    "split_rounds",
]
