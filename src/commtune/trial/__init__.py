"""Trials: run a configuration, time it, classify failures, kill what a run leaves behind."""

from commtune.trial._executor import (
    Executor,
    LocalExecutor,
    Primed,
    ReplayExecutor,
    RunRecord,
    Traced,
    profiled,
    repeats_exactly,
)
from commtune.trial._objective import SIMULATED, Objective
from commtune.trial._probe import probe_space
from commtune.trial._process import (
    ProcessResult,
    clean_shm,
    kill_leftovers,
    processes_of_tuner,
    run_process,
    stderr_summary,
)
from commtune.trial._slurm import SlurmJobs

__all__ = [
    "SIMULATED",
    "Executor",
    "LocalExecutor",
    "Objective",
    "Primed",
    "ProcessResult",
    "ReplayExecutor",
    "RunRecord",
    "SlurmJobs",
    "Traced",
    "clean_shm",
    "kill_leftovers",
    "probe_space",
    "processes_of_tuner",
    "profiled",
    "repeats_exactly",
    "run_process",
    "stderr_summary",
]
