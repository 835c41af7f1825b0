"""The tuner: the reference, the search (each configuration run beside controls of the
defaults), then the verdict (``_decide``: ``--gate risk``, the default, tests the search's
best on fresh pairs of runs beside the defaults with one rule, :mod:`commtune.rule`; the
top-k confirmation of ``_confirm`` is ``--gate strict``'s); in-run racing (``_inrun``). What
it is given is a :class:`Target` (the study, its typed space and the user's ``Plan``) and
every step shares one :class:`Context` (``_target``)."""

from commtune.tune._bysize import SizeChoice, by_comm_size, by_size, chooses_by_size, ranges
from commtune.tune._confirm import CONFIRM_CAP, confirm
from commtune.tune._decide import CONTENDERS, Named, verdict
from commtune.tune._inrun import (
    RUN,
    RUN_MAX,
    WARMUP_BLOCKS,
    Halving,
    Race,
    Raced,
    decide_race,
    decide_races,
    halved,
    halving,
    run_length,
    said_time,
)
from commtune.tune._loop import MIN_TIMEOUT, search, settled, tune
from commtune.tune._pairs import (
    Entrant,
    Failed,
    Lone,
    Rounds,
    Slower,
    Stop,
    executor_runner,
    lone,
)
from commtune.tune._record import Recording, configurations, record
from commtune.tune._reference import (
    ReferenceFailed,
    inherited_mpi_env,
    open_study,
    run_reference,
)
from commtune.tune._schedule import CONTROL_EVERY, RACE_Z, Scheduler
from commtune.tune._stale import (
    MAX_ROUNDS,
    MIN_ROUNDS,
    NO_LONGER_FASTER,
    STILL_FASTER,
    UNCHANGED,
    Difference,
    StaleCheck,
    differences,
    recheck,
)
from commtune.tune._summary import Row, TuneResult, summarize
from commtune.tune._target import Context, Observer, Target
from commtune.tune._whole import WholeRuns, whole_runs
from commtune.tune._workers import Workers

__all__ = [
    "CONFIRM_CAP",
    "CONTENDERS",
    "CONTROL_EVERY",
    "MAX_ROUNDS",
    "MIN_ROUNDS",
    "MIN_TIMEOUT",
    "NO_LONGER_FASTER",
    "RACE_Z",
    "RUN",
    "RUN_MAX",
    "STILL_FASTER",
    "UNCHANGED",
    "WARMUP_BLOCKS",
    "Context",
    "Difference",
    "Entrant",
    "Failed",
    "Halving",
    "Lone",
    "Named",
    "Observer",
    "Race",
    "Raced",
    "Recording",
    "ReferenceFailed",
    "Rounds",
    "Row",
    "Scheduler",
    "SizeChoice",
    "Slower",
    "StaleCheck",
    "Stop",
    "Target",
    "TuneResult",
    "WholeRuns",
    "Workers",
    "by_comm_size",
    "by_size",
    "chooses_by_size",
    "configurations",
    "confirm",
    "decide_race",
    "decide_races",
    "differences",
    "executor_runner",
    "halved",
    "halving",
    "inherited_mpi_env",
    "lone",
    "open_study",
    "ranges",
    "recheck",
    "record",
    "run_length",
    "run_reference",
    "said_time",
    "search",
    "settled",
    "summarize",
    "tune",
    "verdict",
    "whole_runs",
]
