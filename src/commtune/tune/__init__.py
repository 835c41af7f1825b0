"""The tuner: reference, blocked and raced search, top-k confirmation (see ``_loop``)."""

from commtune.tune._confirm import CONFIRM_CAP, confirm
from commtune.tune._loop import (
    MIN_TIMEOUT,
    ReferenceFailed,
    TuneSettings,
    inherited_mpi_env,
    open_study,
    run_reference,
    search,
    tune,
)
from commtune.tune._schedule import CONTROL_EVERY, RACE_Z, Scheduler
from commtune.tune._summary import Row, TuneResult, summarize
from commtune.tune._trials import (
    Noise,
    best_trials,
    measured,
    noise_of,
    objectives_of,
    pareto_front,
    reference_trial,
    runs_spent,
    value_of,
)
from commtune.tune._workers import Workers

__all__ = [
    "CONFIRM_CAP",
    "CONTROL_EVERY",
    "MIN_TIMEOUT",
    "RACE_Z",
    "Noise",
    "ReferenceFailed",
    "Row",
    "Scheduler",
    "TuneResult",
    "TuneSettings",
    "Workers",
    "best_trials",
    "confirm",
    "inherited_mpi_env",
    "measured",
    "noise_of",
    "objectives_of",
    "open_study",
    "pareto_front",
    "reference_trial",
    "run_reference",
    "runs_spent",
    "search",
    "summarize",
    "tune",
    "value_of",
]
