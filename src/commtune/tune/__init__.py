"""The tuner: reference, blocked and raced search, top-k confirmation (see ``_loop``)."""

from commtune.tune._confirm import CONFIRM_CAP, confirm
from commtune.tune._loop import (
    MIN_TIMEOUT,
    Observer,
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
from commtune.tune._workers import Workers

__all__ = [
    "CONFIRM_CAP",
    "CONTROL_EVERY",
    "MIN_TIMEOUT",
    "RACE_Z",
    "Observer",
    "ReferenceFailed",
    "Row",
    "Scheduler",
    "TuneResult",
    "TuneSettings",
    "Workers",
    "confirm",
    "inherited_mpi_env",
    "open_study",
    "run_reference",
    "search",
    "summarize",
    "tune",
]
